package dev.hotkey.kafka.internals;

import java.util.HashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the client tells the application's log (SLF4J, which every kafka-clients classpath
 * has): a topic's first list, the coordinator becoming unreachable and reachable again,
 * reports the coordinator refused, a topic whose family is not the producer's. Each line at
 * most once per cause and {@link #INTERVAL_MS}; lines come from the background threads only,
 * never from the send path. Logger {@code dev.hotkey.kafka}; every line starts with
 * {@code [hotkey clientId=...]}.
 */
public final class ClientLog {
  /** A cause that persists is logged again at most this often. */
  public static final long INTERVAL_MS = 5 * 60 * 1000;

  static final Logger LOG = LoggerFactory.getLogger("dev.hotkey.kafka");

  private final String prefix;
  private final Map<String, Long> lastLogged = new HashMap<>(); // guarded by this
  private final Map<String, Down> down = new HashMap<>(); // guarded by this

  private static final class Down {
    final long sinceMs;
    long failures;
    String detail;

    Down(long sinceMs) {
      this.sinceMs = sinceMs;
    }
  }

  ClientLog(String clientId, String producerId) {
    this.prefix = "[hotkey clientId=" + clientId + " producer=" + producerId + "] ";
  }

  private static long nowMs() {
    return System.nanoTime() / 1_000_000;
  }

  /** True when {@code cause} was not logged within {@code intervalMs} (and marks it logged). */
  synchronized boolean due(String cause, long intervalMs) {
    long now = nowMs();
    Long last = lastLogged.get(cause);
    if (last != null && (intervalMs < 0 || now - last < intervalMs)) {
      return false;
    }
    lastLogged.put(cause, now);
    return true;
  }

  /** A topic's first list reached this producer. Once per topic. */
  void firstList(String topic, long version, int keys, String family) {
    if (due("first-list/" + topic, -1)) {
      LOG.info("{}topic {}: first hot-key list, version {}, {} key(s) salted (list family {})",
          prefix, topic, Long.toUnsignedString(version), keys, family);
    }
  }

  /**
   * A request to the coordinator ({@code what}: reports, lists) failed. Logged when it starts
   * failing, then at most once per interval while it keeps failing.
   */
  void failed(String what, String target, String detail) {
    long now = nowMs();
    String msg = null;
    synchronized (this) {
      Down d = down.get(what);
      if (d == null) {
        d = new Down(now);
        down.put(what, d);
        lastLogged.put("down/" + what, now);
        msg = "coordinator unreachable for " + what + " (" + target + "): " + detail
            + "; routing keeps the last lists" + (what.equals("reports")
                ? ", reports wait in their queue (hotkey.report.queue.max) and are retried"
                : " and asks again with backoff");
      } else if (due("down/" + what, INTERVAL_MS)) {
        msg = "coordinator still unreachable for " + what + " (" + target + ") after "
            + (d.failures + 1) + " failed attempts over " + (now - d.sinceMs) / 1000 + " s: "
            + detail;
      }
      d.failures++;
      d.detail = detail;
    }
    if (msg != null) {
      LOG.warn("{}{}", prefix, msg);
    }
  }

  /** A request to the coordinator ({@code what}) succeeded: logged once after failures. */
  void succeeded(String what, String target) {
    Down d;
    synchronized (this) {
      if (down.isEmpty()) {
        return;
      }
      d = down.remove(what);
    }
    if (d != null) {
      LOG.info("{}coordinator reachable again for {} ({}) after {} failed attempts over {} s",
          prefix, what, target, d.failures, (nowMs() - d.sinceMs) / 1000);
    }
  }

  /** True while requests for {@code what} fail. */
  synchronized boolean isDown(String what) {
    return down.containsKey(what);
  }

  /** Rekey mode (the default) with the partitioner but not the interceptor: said once. */
  void partitionerAlone() {
    if (due("partitioner-alone", -1)) {
      LOG.info("{}hotkey.routing.mode=rekey without dev.hotkey.kafka.HotkeyInterceptor in"
          + " interceptor.classes: the partitioner routes the listed keys itself, keys unchanged"
          + " and without merge headers (as hotkey.routing.mode=route); add the interceptor to"
          + " rekey them", prefix);
    }
  }

  /** A list this client refused (invalid, stale, foreign): once per topic per interval. */
  void listRefused(String topic, String why) {
    if (due("list-refused/" + topic, INTERVAL_MS)) {
      LOG.warn("{}a hot-key list for topic {} was refused: {}; routing keeps the last good"
          + " list", prefix, topic, why);
    }
  }

  /**
   * A topic's list is stale (docs/CLIENT.md, "Local tables"): once per topic and cause per
   * interval.
   */
  void listStale(String topic, long version, String cause, long boundMs) {
    if (due("stale/" + topic + "/" + cause, INTERVAL_MS)) {
      LOG.warn("{}topic {}: the hot-key list (version {}) is stale: {} (hotkey.list.stale.ms={});"
          + " keys this producer sees at the hot threshold are salted with local tables,"
          + " marked hotkey.version 2^63+{}, until a fresh list or contact is back", prefix, topic,
          Long.toUnsignedString(version), cause, boundMs, Long.toUnsignedString(version));
    }
  }

  /** A local table was set for a topic: once per topic per interval. */
  void localTable(String topic, TopicRouter.LocalTables tables) {
    if (due("local-table/" + topic, INTERVAL_MS)) {
      StringBuilder keys = new StringBuilder();
      for (int i = 0; i < tables.keys.size() && i < 5; i++) {
        HotKeyList.HotKey k = tables.keys.get(i);
        String text = KeyCodec.utf8(k.key);
        if (text != null && text.length() > 64) {
          text = text.substring(0, 64) + "...";
        }
        keys.append(i > 0 ? ", " : "").append(text != null ? text : "(binary key)")
            .append(" over ").append(k.salts.size()).append(" partitions");
      }
      if (tables.keys.size() > 5) {
        keys.append(", ...");
      }
      LOG.info("{}topic {}: local table set on list version {}: {} key(s) salted locally ({})",
          prefix, topic, Long.toUnsignedString(tables.baseVersion), tables.keys.size(), keys);
    }
  }

  /** The coordinator refused a report: once per topic and reason per interval. */
  void refused(String topic, int status, String reason, String error, long refusedSoFar) {
    if (due("refused/" + topic + "/" + reason, INTERVAL_MS)) {
      LOG.warn("{}coordinator refused the report for topic {}: {} {}: {} ({} refused so far;"
          + " refused reports are dropped, not retried)", prefix, topic, status, reason,
          error.isEmpty() ? "no reason given" : error, refusedSoFar);
    }
  }

  /**
   * The topic's fleet partitions keys with another family than this producer (murmur2): said
   * once per topic, with the fix.
   */
  void familyMismatch(String topic, String family, String evidence) {
    if (due("family/" + topic, -1)) {
      LOG.warn("{}topic {} is partitioned with {} by other producers of the fleet ({}), while"
          + " this Java producer places keys by murmur2 (Kafka's built-in partitioner): the"
          + " coordinator refuses this producer's reports (hash_mismatch) and its salts cannot"
          + " serve both. Fix: give the topic one family, murmur2: librdkafka producers (C/C++,"
          + " Python, Go, the hotkey plugin) set partitioner=murmur2_random (docs/CLIENT.md"
          + " \"Mixed fleets\"), and the coordinator is told the family: topic setting"
          + " \"hash\": \"murmur2\" (docs/CONFIGURATION.md), or the topic dropped once"
          + " (hotkeyctl delete-topic) so that it learns it from the next report", prefix, topic,
          family, evidence);
    }
  }
}
