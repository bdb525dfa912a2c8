package dev.hotkey.kafka.internals;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToDoubleFunction;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.Measurable;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.common.utils.Time;

/**
 * The client's metrics: a Kafka {@link Metrics} registry with a {@link JmxReporter} under the
 * producer's JMX domain ({@code kafka.producer:type=hotkey-metrics,client-id=...}), so they sit
 * beside the producer's own in JConsole and the Prometheus JMX exporter. Every value is read
 * from the counters the client keeps anyway (the sampler's shards, the reporter's totals) when
 * a reporter asks: nothing on the send path. Per-topic metrics are added by the reporter thread
 * as topics appear, per-reason refusal counts as reasons do.
 */
public final class ClientMetrics implements AutoCloseable {
  public static final String JMX_DOMAIN = "kafka.producer";
  public static final String GROUP = "hotkey-metrics";
  public static final String TOPIC_GROUP = "hotkey-topic-metrics";
  public static final String REJECTED_GROUP = "hotkey-rejected-metrics";

  private final HotkeyClient client;
  private final Metrics metrics;
  private final Map<String, String> tags;
  private final Set<String> topics = new HashSet<>(); // guarded by this
  private final Set<String> reasons = new HashSet<>(); // guarded by this
  private boolean closed; // guarded by this

  ClientMetrics(HotkeyClient client, String clientId) {
    this.client = client;
    JmxReporter jmx = new JmxReporter();
    // The registry's own count metric carries no client-id: one MBean name for every client's
    // registry, which would replace each other. Only ours go to JMX.
    jmx.configure(java.util.Collections.singletonMap("metrics.jmx.exclude",
        ".*type=kafka-metrics-count.*"));
    List<MetricsReporter> reporters = new ArrayList<>();
    reporters.add(jmx);
    this.metrics = new Metrics(new MetricConfig(), reporters, Time.SYSTEM,
        new KafkaMetricsContext(JMX_DOMAIN));
    this.tags = new LinkedHashMap<>();
    tags.put("client-id", clientId);
    add(GROUP, "reports-sent-total", "reports the coordinator accepted (kafka transport:"
        + " acknowledged by the brokers)", c -> c.reportsSent());
    add(GROUP, "reports-failed-total", "report send attempts that failed (network, 5xx,"
        + " 401/403, 429); the reports stay queued", c -> c.reportsFailed());
    add(GROUP, "reports-rejected-total", "reports the coordinator refused (400, 409, 413, 422):"
        + " dropped; by reason in " + REJECTED_GROUP, c -> c.reportsRejected());
    add(GROUP, "reports-dropped-total", "reports dropped because their topic had"
        + " hotkey.report.queue.max waiting", c -> c.reportsDropped());
    add(GROUP, "reports-surge-total", "early reports for a surging key", c -> c.reportsSurge());
    add(GROUP, "list-updates-total", "lists accepted (valid, newer)", c -> c.listUpdates());
    add(GROUP, "list-errors-total", "failed list requests, refused lists",
        c -> c.listErrors());
    add(GROUP, "coordinator-up", "1 while reports and list reads reach the coordinator, 0"
        + " while either fails", c -> c.coordinatorUp() ? 1 : 0);
  }

  private void add(String group, String name, String doc, ToDoubleFunction<HotkeyClient> f) {
    add(metrics.metricName(name, group, doc, tags), (config, now) -> f.applyAsDouble(client));
  }

  private void add(MetricName name, Measurable m) {
    try {
      metrics.addMetric(name, m);
    } catch (RuntimeException e) {
      // A name already there, or JMX refusing it (two producers given one client.id): the
      // registry keeps what it has; stats() still counts.
      ClientLog.LOG.debug("hotkey metric {} not registered: {}", name, e.toString());
    }
  }

  /** Adds the metrics of topics not seen before (the reporter thread, each round). */
  synchronized void syncTopics(List<TopicRouter> current) {
    if (closed) {
      return;
    }
    for (TopicRouter t : current) {
      if (!topics.add(t.topic)) {
        continue;
      }
      Map<String, String> tt = new LinkedHashMap<>(tags);
      tt.put("topic", t.topic);
      addTopic(t, tt, "list-version", "version of the list the topic routes with (0: none)",
          r -> (double) r.version());
      addTopic(t, tt, "list-age-ms", "ms since the coordinator last gave or confirmed the"
          + " topic's list (-1: never)", r -> (double) r.listAgeMs());
      addTopic(t, tt, "list-expired", "1 while the list expired under"
          + " hotkey.list.expired.policy=plain (every key cold)", r -> r.plain() ? 1 : 0);
      addTopic(t, tt, "keys-listed", "keys the topic's routing table salts",
          r -> (double) r.table().entries.size());
      addTopic(t, tt, "records-salted-total", "records sent with a salt",
          r -> (double) r.sampler.counters()[0]);
      addTopic(t, tt, "records-cold-total", "keyed records sent unsalted",
          r -> (double) r.sampler.counters()[1]);
      addTopic(t, tt, "records-null-key-total", "records without a key",
          r -> (double) r.sampler.counters()[2]);
      addTopic(t, tt, "sample-rate", "the sampler's current rate (1: every keyed record)",
          r -> r.sampler.sampleRate());
      addTopic(t, tt, "reports-dropped-total", "this topic's reports dropped"
          + " (hotkey.report.queue.max waiting)", r -> (double) r.reportsDropped.get());
      addTopic(t, tt, "list-stale", "1 while the topic's list is stale (no contact with its"
          + " source for hotkey.list.stale.ms, or its owner gone)", r -> client.stale(r) ? 1 : 0);
      addTopic(t, tt, "local-keys", "keys salted by the topic's local table now", r -> {
        TopicRouter.LocalTables local = r.localTables();
        return local == null ? 0 : local.keys.size();
      });
      addTopic(t, tt, "records-local-salted-total", "records salted by local tables (also in"
          + " records-salted-total)", r -> (double) r.localSalted());
      addTopic(t, tt, "local-tables-total", "local tables set for the topic",
          r -> (double) r.localTablesSet());
    }
  }

  private void addTopic(TopicRouter t, Map<String, String> tt, String name, String doc,
      ToDoubleFunction<TopicRouter> f) {
    add(metrics.metricName(name, TOPIC_GROUP, doc, tt), (config, now) -> f.applyAsDouble(t));
  }

  /** Adds the per-reason refusal count of a reason not seen before (the reporter thread). */
  synchronized void syncReason(String reason, AtomicLong count) {
    if (closed || !reasons.add(reason)) {
      return;
    }
    Map<String, String> tr = new LinkedHashMap<>(tags);
    tr.put("reason", reason);
    add(metrics.metricName("reports-rejected-total", REJECTED_GROUP,
        "reports the coordinator refused for this reason", tr), (config, now) -> count.get());
  }

  /** Every metric of this client (a read-only view of the registry). */
  public Map<MetricName, KafkaMetric> metrics() {
    return java.util.Collections.unmodifiableMap(metrics.metrics());
  }

  @Override
  public synchronized void close() {
    if (!closed) {
      closed = true;
      metrics.close();
    }
  }
}
