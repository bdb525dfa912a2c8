package dev.hotkey.kafka;

import dev.hotkey.kafka.internals.PartitionerCore;

/**
 * {@code partitioner.class}: every keyed record not on the topic's hot-key list goes exactly
 * where Kafka's built-in partitioner sends it (murmur2 of the serialized key, masked to 31
 * bits, modulo the topic's partition count); a listed key takes a salt of its verified table by
 * weight, with the C++ client's smooth weighted round robin (route mode: the record keeps its
 * key). Records the interceptor rekeyed are placed by their salted key, like any cold key.
 * Every keyed record is counted and sampled for the reports here, where its partition is known.
 * Configured with {@link HotkeyInterceptor} (docs/CLIENT-JAVA.md); the {@code hotkey.*}
 * properties are those of {@link HotkeyConfig}.
 *
 * <p>The code is in its internal superclass (the send path stays one call deep); this class is
 * the public name a producer's configuration uses.
 */
public class HotkeyPartitioner extends PartitionerCore {
  public HotkeyPartitioner() {}

  /**
   * The statistics of the producer's hot-key client, which this partitioner shares with the
   * producer's other hotkey plugin (docs/CLIENT-JAVA.md "Statistics and metrics"); all zero
   * before {@code configure} and after {@code close}. With only the producer at hand:
   * {@link HotkeyMetrics#stats}.
   */
  @Override
  public HotkeyStats stats() {
    return super.stats();
  }
}
