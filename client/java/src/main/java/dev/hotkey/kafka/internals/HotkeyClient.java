package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyStats;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The core one producer's partitioner and interceptor share (client/src/client.cc): per-topic
 * routers and samplers, the reporter and the list subscriber. Created by whichever of the two
 * Kafka configures first and found by the other through the producer's client.id; closed when
 * both have closed.
 */
public final class HotkeyClient implements AutoCloseable {
  final Settings config;
  private final ConcurrentHashMap<String, TopicRouter> topics = new ConcurrentHashMap<>();
  private final Object topicsLock = new Object();
  // The router of the previous topic asked for (interceptor and partitioner alike).
  private volatile TopicRouter lastTopic;
  private volatile List<TopicRouter> topicList = List.of();
  final Reporter reporter;
  final ListSource lists;
  private final KafkaTransport kafka;
  final AtomicLong listUpdates = new AtomicLong();
  final AtomicLong listErrors = new AtomicLong();
  private int refs;
  private final String registryKey;
  /** The producer's client.id (Kafka hands it to both plugins), or null. */
  final String clientId;
  final ClientLog log;
  final ClientMetrics metrics;

  private static final Map<String, HotkeyClient> REGISTRY = new HashMap<>();

  /** The client of the producer whose configuration is {@code configs}, created on first use. */
  static HotkeyClient acquire(Map<String, ?> configs) {
    Settings parsed = Settings.parse(configs);
    checkKafkaVersion(KafkaVersions.running(), parsed.versionStrict);
    Object clientId = configs.get("client.id");
    Map<String, Object> hotkeyProps = new java.util.TreeMap<>();
    for (Map.Entry<String, ?> e : configs.entrySet()) {
      if (e.getKey().startsWith(dev.hotkey.kafka.HotkeyConfig.PREFIX)) {
        hotkeyProps.put(e.getKey(), String.valueOf(e.getValue()));
      }
    }
    String key = clientId + "\u0000" + hotkeyProps;
    synchronized (REGISTRY) {
      HotkeyClient c = REGISTRY.get(key);
      if (c == null) {
        if (parsed.producerId.isEmpty()) {
          parsed.producerId = uniqueDefaultId(clientId == null ? null : clientId.toString());
        }
        c = new HotkeyClient(parsed, key, clientId == null ? null : clientId.toString());
        REGISTRY.put(key, c);
        c.start();
      }
      c.refs++;
      return c;
    }
  }

  private static boolean versionWarned;

  /** Refuses (strict) or logs once (warn) a kafka-clients outside the tested lines. */
  static void checkKafkaVersion(String version, boolean strict) {
    String why = KafkaVersions.outsideRange(version);
    if (why == null) {
      return;
    }
    if (strict) {
      throw new org.apache.kafka.common.config.ConfigException(why + ". Use kafka-clients "
          + KafkaVersions.supported() + ", or set hotkey.clients.version.check=warn to run"
          + " with " + version + " untested");
    }
    synchronized (REGISTRY) {
      if (versionWarned) {
        return;
      }
      versionWarned = true;
    }
    ClientLog.LOG.warn("[hotkey] {}; running with it (hotkey.clients.version.check=warn)", why);
  }

  /** Releases one reference; the last one stops the background threads. */
  void release() {
    synchronized (REGISTRY) {
      if (--refs > 0) {
        return;
      }
      REGISTRY.remove(registryKey, this);
    }
    close();
  }

  /**
   * {@code <hostname>-<pid>-<client.id>}; a client.id another live client already reports
   * under (two producers given one client.id) gets {@code -2}, {@code -3}, ... appended.
   */
  private static String uniqueDefaultId(String clientId) {
    String base = Settings.defaultProducerId(clientId);
    java.util.Set<String> used = new java.util.HashSet<>();
    for (HotkeyClient c : REGISTRY.values()) {
      used.add(c.config.producerId);
    }
    String id = base;
    for (int n = 2; used.contains(id); n++) {
      id = Settings.clip(base + "-" + n);
    }
    return id;
  }

  /** A client outside the registry (tests): producer id as configured, or the default. */
  HotkeyClient(Settings config, String registryKey) {
    this(withId(config), registryKey, null);
  }

  private static Settings withId(Settings config) {
    if (config.producerId.isEmpty()) {
      config.producerId = Settings.defaultProducerId(null);
    }
    return config;
  }

  HotkeyClient(Settings config, String registryKey, String clientId) {
    this.config = config;
    this.registryKey = registryKey;
    this.clientId = clientId;
    this.log = new ClientLog(clientId == null ? "-" : clientId, config.producerId);
    this.metrics = new ClientMetrics(this, clientId == null ? config.producerId : clientId);
    KafkaTransport kafka = config.transport == Settings.Transport.KAFKA
        ? new KafkaTransport(config, this) : null;
    this.kafka = kafka;
    this.reporter = config.connected() ? new Reporter(config, this, kafka) : null;
    if (!config.connected()) {
      this.lists = null;
    } else if (kafka != null) {
      this.lists = kafka;
    } else {
      this.lists = new HttpListSubscriber(config, this);
    }
  }

  private void start() {
    if (reporter != null) {
      reporter.start();
    }
    for (String t : config.topics) {
      topic(t);
    }
    if (config.startupWaitMs > 0 && lists != null && !config.topics.isEmpty()) {
      long deadline = System.nanoTime() + config.startupWaitMs * 1_000_000L;
      for (String t : config.topics) {
        TopicRouter r = topic(t);
        while (r.version() == 0 && System.nanoTime() < deadline) {
          try {
            Thread.sleep(10);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
          }
        }
      }
    }
  }

  /**
   * The topic's router, created (and followed by the list source) on first use. Kept small so
   * the JIT inlines it into the send path: the previous topic's router is one reference compare
   * (producers mostly send to one topic), then a map lookup.
   */
  TopicRouter topic(String name) {
    TopicRouter r = lastTopic;
    if (r != null && r.topic.equals(name)) {
      return r;
    }
    r = topics.get(name);
    if (r == null) {
      r = createTopic(name);
    }
    lastTopic = r;
    return r;
  }

  private TopicRouter createTopic(String name) {
    TopicRouter r;
    synchronized (topicsLock) {
      r = topics.get(name);
      if (r != null) {
        return r;
      }
      boolean adaptive = config.sampleAuto && config.connected();
      double rate = config.sampleAuto ? (config.connected() ? 1.0 : 1e-6) : config.sampleRate;
      Sampler sampler = new Sampler(config.sketchCapacity, adaptive, rate,
          config.connected() && config.surgeIntervalMs > 0 ? config.surgeFactor : 0);
      if (reporter != null) {
        sampler.onSurge(reporter::wake);
      }
      r = new TopicRouter(name, sampler);
      List<TopicRouter> next = new ArrayList<>(topicList);
      next.add(r);
      topicList = List.copyOf(next);
      topics.put(name, r);
    }
    if (lists != null && HotKeyList.validTopicName(name)) {
      lists.follow(r);
    }
    return r;
  }

  TopicRouter existingTopic(String name) {
    return topics.get(name);
  }

  List<TopicRouter> topics() {
    return topicList;
  }

  /**
   * Publishes a validated list on its topic's router; false when it is not newer. The first
   * list of a topic, and a list of another family than the producer's, are logged.
   */
  boolean published(TopicRouter t, HotKeyList list) {
    boolean first = t.version() == 0;
    if (!t.publish(list)) {
      return false;
    }
    t.contact(System.nanoTime());
    listUpdates.incrementAndGet();
    if (first) {
      log.firstList(t.topic, list.version, list.keys.size(), list.hash.wireName());
    }
    if (list.hash != HashFamily.MURMUR2) {
      log.familyMismatch(t.topic, list.hash.wireName(), "the coordinator's list version "
          + Long.toUnsignedString(list.version) + " says hash " + list.hash.wireName());
    }
    return true;
  }

  /** Why {@code published(t, list)} refused a list for {@code t} (the log line's reason). */
  static String refusal(TopicRouter t, HotKeyList list) {
    if (list.version < 0) {
      return "version " + Long.toUnsignedString(list.version) + " is at or above 2^63, the"
          + " range that marks a producer's local table (no coordinator issues it)";
    }
    return "version " + Long.toUnsignedString(list.version) + " is not above "
        + Long.toUnsignedString(t.version());
  }

  /** Whether t's list is stale now (docs/CLIENT.md, "Local tables"; never with the bound 0). */
  boolean stale(TopicRouter t) {
    return t.staleness.stale(config.listStaleMs, Staleness.nowMs());
  }

  /** Sends the current windows now and waits for the round (tests, shutdown). */
  public void reportNow() {
    if (reporter != null) {
      reporter.reportNow();
    }
  }

  /** The version of the list {@code topic} routes with (0: none). */
  public long listVersion(String topic) {
    TopicRouter r = topics.get(topic);
    return r == null ? 0 : r.version();
  }

  public long reportsSent() {
    if (reporter == null) {
      return 0;
    }
    return kafka != null ? kafka.delivered.get() : reporter.sent.get();
  }

  public long reportsFailed() {
    if (reporter == null) {
      return 0;
    }
    return reporter.failed.get() + (kafka != null ? kafka.undelivered.get() : 0);
  }

  public long reportsRejected() {
    return reporter == null ? 0 : reporter.rejected.get();
  }

  public long reportsDropped() {
    return reporter == null ? 0 : reporter.dropped.get();
  }

  public long reportsSurge() {
    return reporter == null ? 0 : reporter.surges.get();
  }

  /** Refused reports by the coordinator's reason. */
  public Map<String, Long> reportsRefusedByReason() {
    Map<String, Long> out = new java.util.TreeMap<>();
    if (reporter != null) {
      reporter.refusedByReason.forEach((k, v) -> out.put(k, v.get()));
    }
    return out;
  }

  /** False while reports or list reads fail to reach the coordinator. */
  public boolean coordinatorUp() {
    return config.connected() && !log.isDown("reports") && !log.isDown("lists");
  }

  /** The live client of the producer whose client.id is {@code clientId}, or null. */
  public static HotkeyClient forClientId(String clientId) {
    synchronized (REGISTRY) {
      for (HotkeyClient c : REGISTRY.values()) {
        if (clientId.equals(c.clientId)) {
          return c;
        }
      }
      return null;
    }
  }

  /** The statistics now (docs/CLIENT-JAVA.md "Statistics"). */
  public HotkeyStats stats() {
    List<HotkeyStats.TopicStats> ts = new ArrayList<>();
    for (TopicRouter t : topics()) {
      long[] c = t.sampler.counters();
      TopicRouter.LocalTables local = t.localTables();
      ts.add(new HotkeyStats.TopicStats(t.topic, t.version(), t.listAgeMs(), t.livePartitions(),
          t.table().entries.size(), t.plain(), c[0], c[1], c[2], t.reportsDropped.get(),
          t.sampler.sampleRate(), stale(t), local == null ? 0 : local.keys.size(),
          t.localSalted(), t.localTablesSet()));
    }
    return new HotkeyStats(config.producerId, reportsSent(), reportsFailed(), reportsRejected(),
        java.util.Collections.unmodifiableMap(reportsRefusedByReason()), reportsDropped(),
        reportsSurge(), listUpdates(), listErrors(), coordinatorUp(), List.copyOf(ts));
  }

  /** The client's metrics registry (topics seen so far included). */
  public ClientMetrics metrics() {
    metrics.syncTopics(topics());
    return metrics;
  }

  public long listUpdates() {
    return listUpdates.get();
  }

  public long listErrors() {
    return listErrors.get();
  }

  @Override
  public void close() {
    if (reporter != null) {
      reporter.stop(true);
    }
    if (lists != null) {
      lists.close();
    }
    metrics.close();
  }

  /** Where lists come from: the HTTP long-poll or the lists topic. */
  interface ListSource extends AutoCloseable {
    void follow(TopicRouter topic);

    @Override
    void close();
  }
}
