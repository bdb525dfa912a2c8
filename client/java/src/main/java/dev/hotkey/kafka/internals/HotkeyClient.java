package dev.hotkey.kafka.internals;

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
  final AtomicLong listUpdates = new AtomicLong();
  final AtomicLong listErrors = new AtomicLong();
  private int refs;
  private final String registryKey;

  private static final Map<String, HotkeyClient> REGISTRY = new HashMap<>();

  /** The client of the producer whose configuration is {@code configs}, created on first use. */
  static HotkeyClient acquire(Map<String, ?> configs) {
    Settings parsed = Settings.parse(configs);
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
        c = new HotkeyClient(parsed, key);
        REGISTRY.put(key, c);
        c.start();
      }
      c.refs++;
      return c;
    }
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

  HotkeyClient(Settings config, String registryKey) {
    this.config = config;
    this.registryKey = registryKey;
    KafkaTransport kafka = config.transport == Settings.Transport.KAFKA
        ? new KafkaTransport(config, this) : null;
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
    return reporter == null ? 0 : reporter.sent.get();
  }

  public long reportsFailed() {
    return reporter == null ? 0 : reporter.failed.get();
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
  }

  /** Where lists come from: the HTTP long-poll or the lists topic. */
  interface ListSource extends AutoCloseable {
    void follow(TopicRouter topic);

    @Override
    void close();
  }
}
