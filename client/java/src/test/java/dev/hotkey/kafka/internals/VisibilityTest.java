package dev.hotkey.kafka.internals;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyMetrics;
import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.HotkeyStats;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.binder.kafka.KafkaClientMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.management.ManagementFactory;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a producer's operators see (docs/CLIENT-JAVA.md "Logs", "Statistics and metrics"): the
 * SLF4J lines (each once per cause, however often it happens), stats(), the JMX metrics and
 * Micrometer's Kafka binder over them, against the real coordinator process.
 */
class VisibilityTest {
  private static final int PARTITIONS = 24;
  private final Cluster cluster = Lists.cluster("orders", PARTITIONS);
  private HotkeyPartitioner partitioner;
  private HotkeyInterceptor interceptor;
  private static int clients;
  private String clientId;

  @TempDir
  Path tmp;

  @BeforeAll
  static void needsCoordinator() {
    CoordinatorProcess.assumeBuilt();
  }

  private Plugins plugins;

  private void open(String url) {
    clientId = "visibility-test-" + (++clients);
    plugins = Plugins.open(Plugins.configs(clientId, "hotkey.coordinator.url", url,
        "hotkey.report.interval.ms", "100", "hotkey.poll.wait.ms", "1000",
        "hotkey.backoff.initial.ms", "20", "hotkey.backoff.max.ms", "100"));
    interceptor = plugins.interceptor;
    partitioner = plugins.partitioner;
  }

  @AfterEach
  void close() {
    if (plugins != null) {
      plugins.close();
    }
  }

  private void send(String topic, String key) {
    byte[] b = key.getBytes(StandardCharsets.UTF_8);
    partitioner.partition(topic, key, b, "v", new byte[1], Lists.cluster(topic, PARTITIONS));
  }

  /** Sends 40% "hot" over 1,000 cold keys until {@code done}, at most 30 s. */
  private boolean sendUntil(String topic, BooleanSupplier done) throws InterruptedException {
    long deadline = System.nanoTime() + 30_000_000_000L;
    for (int i = 0; System.nanoTime() < deadline; i++) {
      send(topic, i % 5 < 2 ? "hot" : "cold-" + (i % 1000));
      if (i % 500 == 0) {
        if (done.getAsBoolean()) {
          return true;
        }
        Thread.sleep(5);
      }
    }
    return done.getAsBoolean();
  }

  private static int freePort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /**
   * A coordinator URL on a closed port: one warning per kind of request (reports, lists), not
   * one per failure, coordinatorUp false; the coordinator started there: one line each that it
   * is reachable again, the topic's first list logged once, and the counters of stats(), JMX
   * and Micrometer moving.
   */
  @Test
  void anUnreachableCoordinatorIsLoggedOnceAndItsReturnToo() throws Exception {
    int port = freePort();
    open("http://127.0.0.1:" + port);
    assertTrue(sendUntil("orders", () -> partitioner.client().reportsFailed() >= 5
        && partitioner.client().listErrors() >= 5), "reports and list reads never failed");
    HotkeyStats down = partitioner.stats();
    assertFalse(down.coordinatorUp());
    assertEquals(0, down.reportsSent());
    assertEquals(1, TestLog.lines(clientId, "coordinator unreachable for reports").size());
    assertEquals(1, TestLog.lines(clientId, "coordinator unreachable for lists").size());
    assertTrue(TestLog.lines(clientId, "unreachable for reports").get(0)
        .contains("127.0.0.1:" + port), "the line names the coordinator");

    try (CoordinatorProcess coordinator = new CoordinatorProcess(
        Files.createDirectories(tmp.resolve("coordinator")), port)) {
      coordinator.start();
      assertTrue(sendUntil("orders", () -> partitioner.client().listVersion("orders") > 0
          && partitioner.stats().coordinatorUp()), "no list, or the coordinator never up");
      HotkeyStats up = partitioner.stats();
      assertTrue(up.reportsSent() > 0);
      HotkeyStats.TopicStats orders = up.topic("orders");
      assertNotNull(orders);
      assertTrue(orders.listVersion() > 0 && orders.hotKeys() >= 1, orders.toString());
      assertTrue(orders.listAgeMs() >= 0 && orders.listAgeMs() < 30_000, orders.toString());
      assertTrue(orders.salted() > 0 && orders.cold() > 0, orders.toString());
      assertEquals(PARTITIONS, orders.partitions());
      assertEquals(1, TestLog.lines(clientId, "coordinator reachable again for reports").size());
      assertEquals(1, TestLog.lines(clientId, "coordinator reachable again for lists").size());
      List<String> first = TestLog.lines(clientId, "topic orders: first hot-key list");
      assertEquals(1, first.size(), String.valueOf(first));
      // JMX: the producer's domain, the client's id.
      MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
      ObjectName client = new ObjectName("kafka.producer:type=hotkey-metrics,client-id="
          + clientId);
      ObjectName topic = new ObjectName("kafka.producer:type=hotkey-topic-metrics,client-id="
          + clientId + ",topic=orders");
      assertTrue((Double) jmx.getAttribute(client, "reports-sent-total") > 0);
      assertEquals(1.0, (Double) jmx.getAttribute(client, "coordinator-up"));
      assertTrue((Double) jmx.getAttribute(topic, "list-version") > 0);
      assertTrue((Double) jmx.getAttribute(topic, "records-salted-total") > 0);
      assertTrue((Double) jmx.getAttribute(topic, "keys-listed") >= 1);
    }
    plugins.close();
    plugins = null;
    assertFalse(ManagementFactory.getPlatformMBeanServer().isRegistered(new ObjectName(
        "kafka.producer:type=hotkey-metrics,client-id=" + clientId)), "closed: unregistered");
  }

  /**
   * A topic the coordinator partitions with crc32 (a mixed fleet with librdkafka's default
   * partitioner): the Java producer's reports are refused as hash_mismatch. The refusals are
   * counted by reason (stats, JMX, Micrometer), dropped rather than retried (the other topic's
   * reports keep flowing), logged once, and the family mismatch once with the fix.
   */
  @Test
  void refusedReportsAreCountedByReasonAndTheFamilyMismatchIsExplainedOnce() throws Exception {
    try (CoordinatorProcess coordinator = new CoordinatorProcess(
        Files.createDirectories(tmp.resolve("coordinator")))) {
      coordinator.config("\"topics\": {\"mixed\": {\"hash\": \"crc32\"}}").start();
      open(coordinator.url());
      assertTrue(sendUntil("mixed", () -> partitioner.stats().reportsRejected() >= 5),
          "no report refused");
      // The other topic's reports are accepted meanwhile: nothing waits behind the refusals.
      assertTrue(sendUntil("orders", () -> partitioner.stats().reportsSent() >= 3));
      HotkeyStats s = partitioner.stats();
      assertEquals(s.reportsRejected(), (long) s.reportsRejectedByReason().get("hash_mismatch"));
      assertTrue(s.coordinatorUp(), "refusals are answers: the coordinator is reachable");
      assertEquals(1, TestLog.lines(clientId, "refused the report for topic mixed: 409"
          + " hash_mismatch").size());
      List<String> family = TestLog.lines(clientId, "topic mixed is partitioned with crc32");
      assertEquals(1, family.size(), String.valueOf(family));
      assertTrue(family.get(0).contains("partitioner=murmur2_random"), family.get(0));
      assertEquals(0, TestLog.lines(clientId, "topic orders is partitioned").size());

      ObjectName byReason = new ObjectName("kafka.producer:type=hotkey-rejected-metrics,"
          + "client-id=" + clientId + ",reason=hash_mismatch");
      assertTrue((Double) ManagementFactory.getPlatformMBeanServer()
          .getAttribute(byReason, "reports-rejected-total") >= 5);
    }
  }

  /**
   * A real KafkaProducer (its broker never reached): HotkeyMetrics finds its client from the
   * producer alone, and Micrometer's KafkaClientMetrics binds the hot-key metrics through
   * HotkeyMetrics.asProducer, as docs/CLIENT-JAVA.md shows.
   */
  @Test
  void micrometersKafkaBinderShowsTheMetricsOfARealProducer() throws Exception {
    java.util.Properties p = new java.util.Properties();
    p.put("bootstrap.servers", "127.0.0.1:1");
    p.put("client.id", "visibility-micrometer");
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    p.put("partitioner.class", HotkeyPartitioner.class.getName());
    p.put("interceptor.classes", HotkeyInterceptor.class.getName());
    p.put("hotkey.coordinator.url", "http://127.0.0.1:" + freePort());
    p.put("hotkey.report.interval.ms", "100");
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      assertEquals("visibility-micrometer",
          HotkeyMetrics.stats(producer).orElseThrow().producerId().substring(
              HotkeyMetrics.stats(producer).orElseThrow().producerId().length()
                  - "visibility-micrometer".length()));
      assertTrue(HotkeyMetrics.metrics(producer).keySet().stream()
          .anyMatch(n -> n.name().equals("reports-failed-total")));
      Producer<?, ?> view = HotkeyMetrics.asProducer(producer);
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      try (KafkaClientMetrics binder = new KafkaClientMetrics(view)) {
        binder.bindTo(registry);
        Meter failed = null;
        for (Meter m : registry.getMeters()) {
          if (m.getId().getName().contains("reports.failed")) {
            failed = m;
          }
        }
        StringBuilder names = new StringBuilder();
        registry.getMeters().forEach(m -> names.append(m.getId().getName()).append(' '));
        assertNotNull(failed, "meters: " + names);
        assertEquals("visibility-micrometer", failed.getId().getTag("client.id"));
      }
      producer.close(java.time.Duration.ZERO);
    }
  }
}
