package dev.hotkey.kafka;

import dev.hotkey.kafka.internals.HotkeyClient;
import dev.hotkey.kafka.internals.PartitionerCore;
import java.util.Map;
import org.apache.kafka.clients.producer.Partitioner;
import org.apache.kafka.common.Cluster;

/**
 * {@code partitioner.class}: every keyed record not on the topic's hot-key list goes exactly
 * where Kafka's built-in partitioner sends it (murmur2 of the serialized key, masked to 31
 * bits, modulo the topic's partition count); a listed key takes a salt of its verified table by
 * weight, with the C++ client's smooth weighted round robin (route mode: the record keeps its
 * key). Records the interceptor rekeyed are placed by their salted key, like any cold key.
 * Every keyed record is counted and sampled for the reports here, where its partition is known.
 * Configured with {@link HotkeyInterceptor} (docs/CLIENT-JAVA.md); the {@code hotkey.*}
 * properties are those of {@link HotkeyConfig}.
 */
public class HotkeyPartitioner implements Partitioner {
  private final PartitionerCore core = new PartitionerCore();

  @Override
  public void configure(Map<String, ?> configs) {
    core.configure(configs);
  }

  @Override
  public int partition(String topic, Object key, byte[] keyBytes, Object value, byte[] valueBytes,
      Cluster cluster) {
    return core.partition(topic, key, keyBytes, value, valueBytes, cluster);
  }

  /**
   * The client this partitioner shares with the producer's interceptor. Internal (its package
   * is not part of the API): for this library's tests and benchmarks.
   */
  public HotkeyClient client() {
    return core.client();
  }

  @Override
  public void close() {
    core.close();
  }
}
