package dev.hotkey.kafka;

import java.util.List;
import java.util.Map;

/**
 * A producer's hot-key client statistics at one moment: the C++ client's {@code ClientStats}
 * (docs/CLIENT.md "Statistics", same fields in camel case) plus what the Java client adds (the
 * rejections by reason, whether the coordinator is reached, each list's age and the sample
 * rate). From {@link HotkeyPartitioner#stats()}, {@link HotkeyInterceptor#stats()} or, with
 * only the producer at hand, {@link HotkeyMetrics#stats}. Counters only grow.
 *
 * @param producerId the id reports carry ({@code hotkey.producer.id})
 * @param reportsSent reports the coordinator accepted (kafka transport: acknowledged by the
 *     brokers)
 * @param reportsFailed send attempts that failed (network, 5xx, 401/403, 429); the reports stay
 *     queued and are retried
 * @param reportsRejected reports the coordinator refused (400, 409, 413, 422): dropped, never
 *     retried
 * @param reportsRejectedByReason {@code reportsRejected} by the coordinator's reason
 *     ({@code hash_mismatch}, ...; {@code http_<status>} when it gave none)
 * @param reportsDropped reports dropped because their topic had {@code hotkey.report.queue.max}
 *     waiting
 * @param reportsSurge early reports built for a surging key
 * @param listUpdates lists accepted (valid, newer)
 * @param listErrors failed list requests, refused lists (invalid, stale, foreign)
 * @param coordinatorUp false while reports or list reads fail to reach the coordinator (and
 *     when no coordinator is configured)
 * @param topics one entry per topic this producer sent to
 */
public record HotkeyStats(String producerId, long reportsSent, long reportsFailed,
    long reportsRejected, Map<String, Long> reportsRejectedByReason, long reportsDropped,
    long reportsSurge, long listUpdates, long listErrors, boolean coordinatorUp,
    List<TopicStats> topics) {

  /**
   * One topic.
   *
   * @param topic the topic
   * @param listVersion version of the list routed with (0: none)
   * @param listAgeMs ms since the coordinator last gave or confirmed the list (-1: never)
   * @param partitions live partition count last seen on the send path
   * @param hotKeys keys the routing table salts
   * @param plain the list expired under {@code hotkey.list.expired.policy=plain}
   * @param salted records sent with a salt
   * @param cold keyed records sent unsalted
   * @param nullKey records without a key
   * @param reportsDropped this topic's share of {@code reportsDropped}
   * @param sampleRate the sampler's current rate (1: every keyed record)
   * @param stale the topic's list is stale now: no contact with its source for
   *     {@code hotkey.list.stale.ms}, or its owner gone (docs/CLIENT.md "Local tables")
   * @param localKeys keys salted by the topic's local table now
   * @param localSalted records salted by local tables so far (also counted in {@code salted})
   * @param localTables local tables set for the topic so far
   */
  public record TopicStats(String topic, long listVersion, long listAgeMs, int partitions,
      int hotKeys, boolean plain, long salted, long cold, long nullKey, long reportsDropped,
      double sampleRate, boolean stale, int localKeys, long localSalted, long localTables) {}

  /** The entry of {@code topic}, or null. */
  public TopicStats topic(String topic) {
    for (TopicStats t : topics) {
      if (t.topic().equals(topic)) {
        return t;
      }
    }
    return null;
  }
}
