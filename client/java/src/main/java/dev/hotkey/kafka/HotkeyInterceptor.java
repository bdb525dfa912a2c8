package dev.hotkey.kafka;

import dev.hotkey.kafka.internals.InterceptorCore;

/**
 * {@code interceptor.classes}: in rekey mode (the default) a record whose key is on the topic's
 * hot-key list leaves {@code onSend} as a new record with the salted key
 * {@code <key><separator><salt>}, marked as {@link MergeContract} says, so Kafka's
 * murmur2 of the salted key puts it on the salt's partition and any tool can recompute it. Keys
 * of type String (with StringSerializer, UTF-8), byte[] and Bytes are rekeyed; the partitioner
 * routes any other listed key in route mode. In route mode this interceptor changes nothing.
 * Configured with {@link HotkeyPartitioner} (docs/CLIENT-JAVA.md).
 *
 * <p>The code is in its internal superclass (the send path stays one call deep); this class is
 * the public name a producer's configuration uses.
 */
public class HotkeyInterceptor extends InterceptorCore {
  public HotkeyInterceptor() {}

  /**
   * The statistics of the producer's hot-key client, which this interceptor shares with the
   * producer's other hotkey plugin (docs/CLIENT-JAVA.md "Statistics and metrics"); all zero
   * before {@code configure} and after {@code close}. With only the producer at hand:
   * {@link HotkeyMetrics#stats}.
   */
  @Override
  public HotkeyStats stats() {
    return super.stats();
  }
}
