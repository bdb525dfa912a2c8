package dev.hotkey.kafka;

import dev.hotkey.kafka.internals.HotkeyClient;
import dev.hotkey.kafka.internals.InterceptorCore;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

/**
 * {@code interceptor.classes}: in rekey mode (the default) a record whose key is on the topic's
 * hot-key list leaves {@code onSend} as a new record with the salted key
 * {@code <key><separator><salt>} and the merge headers of {@link MergeContract}, so Kafka's
 * murmur2 of the salted key puts it on the salt's partition and any tool can recompute it. Keys
 * of type String (with StringSerializer, UTF-8), byte[] and Bytes are rekeyed; the partitioner
 * routes any other listed key in route mode. In route mode this interceptor changes nothing.
 * Configured with {@link HotkeyPartitioner} (docs/CLIENT-JAVA.md).
 */
public class HotkeyInterceptor implements ProducerInterceptor<Object, Object> {
  private final InterceptorCore core = new InterceptorCore();

  @Override
  public void configure(Map<String, ?> configs) {
    core.configure(configs);
  }

  @Override
  public ProducerRecord<Object, Object> onSend(ProducerRecord<Object, Object> record) {
    return core.onSend(record);
  }

  @Override
  public void onAcknowledgement(RecordMetadata metadata, Exception exception) {}

  /**
   * The client this interceptor shares with the producer's partitioner. Internal (its package
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
