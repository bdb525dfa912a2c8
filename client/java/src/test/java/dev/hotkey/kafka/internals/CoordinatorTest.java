package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyConfig;
import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.MergeContract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java client against the real C++ coordinator process on loopback: reports (binary and
 * JSON batches) make it detect a hot key, the list reaches the client by long-poll and routes
 * it over its verified salts while cold keys stay put; a killed coordinator leaves routing on
 * the last good list (keep), or plain after the TTL (plain) until it answers again.
 */
class CoordinatorTest {
  private static final int PARTITIONS = 24;
  private final Cluster cluster = Lists.cluster("orders", PARTITIONS);
  private HotkeyPartitioner partitioner;
  private HotkeyInterceptor interceptor;
  private static int clients;

  @BeforeAll
  static void needsCoordinator() {
    CoordinatorProcess.assumeBuilt();
  }

  private Plugins plugins;

  private void open(String url, String... props) {
    Map<String, Object> configs = Plugins.configs("coordinator-test-" + (++clients),
        "hotkey.coordinator.url", url, "hotkey.report.interval.ms", "100",
        "hotkey.poll.wait.ms", "1000", "hotkey.backoff.max.ms", "200");
    for (int i = 0; i < props.length; i += 2) {
      configs.put(props[i], props[i + 1]);
    }
    plugins = Plugins.open(configs);
    interceptor = plugins.interceptor;
    partitioner = plugins.partitioner;
  }

  @AfterEach
  void close() {
    if (plugins != null) {
      plugins.close();
    }
  }

  private int send(String key) {
    byte[] b = key.getBytes(StandardCharsets.UTF_8);
    return partitioner.partition("orders", key, b, "v", new byte[1], cluster);
  }

  /** Sends a skewed workload (40% one key) until {@code done}, at most 30 s. */
  private boolean sendUntil(BooleanSupplier done) throws InterruptedException {
    long deadline = System.nanoTime() + 30_000_000_000L;
    int i = 0;
    while (System.nanoTime() < deadline) {
      for (int n = 0; n < 500; n++, i++) {
        send(i % 5 < 2 ? "hot" : "cold-" + (i % 977));
      }
      if (done.getAsBoolean()) {
        return true;
      }
      Thread.sleep(5);
    }
    return false;
  }

  private Set<Integer> hotPartitions(int records) {
    Set<Integer> seen = new HashSet<>();
    for (int i = 0; i < records; i++) {
      seen.add(send("hot"));
    }
    return seen;
  }

  private static final int HOT_COLD =
      BuiltInPartitioner.partitionForKey("hot".getBytes(StandardCharsets.UTF_8), PARTITIONS);

  private void detectAndRoute(String format, Path dir) throws Exception {
    try (CoordinatorProcess coordinator = new CoordinatorProcess(dir)) {
      coordinator.start();
      open(coordinator.url(), "hotkey.routing.mode", "route", "hotkey.report.format", format);
      HotkeyClient client = partitioner.client();
      // The list can come back before the reporter has counted the answer that made it.
      assertTrue(sendUntil(() -> client.listVersion("orders") > 0 && client.reportsSent() > 0),
          "no list within 30 s; reports sent " + client.reportsSent() + ", failed "
              + client.reportsFailed());
      Set<Integer> hot = hotPartitions(2000);
      HotKeyList list = client.topic("orders").list();
      assertTrue(hot.size() > 1, "the hot key stayed on " + hot + " with list version "
          + list.version + ": " + list.keys.size() + " keys, "
          + (list.keys.isEmpty() ? 0 : list.keys.get(0).salts.size()) + " salts");
      Set<Integer> listed = new HashSet<>();
      list.keys.stream().filter(k -> new String(k.key, StandardCharsets.UTF_8).equals("hot"))
          .forEach(k -> k.salts.forEach(s -> listed.add(s.partition)));
      assertEquals(listed, hot, "the hot key goes to exactly its verified salts' partitions");
      for (int i = 0; i < 977; i++) {
        String key = "cold-" + i;
        assertEquals(BuiltInPartitioner.partitionForKey(key.getBytes(StandardCharsets.UTF_8),
            PARTITIONS), send(key), key);
      }
      String topics = new String(coordinator.request("GET", "/v1/topics/orders", null).body,
          StandardCharsets.UTF_8);
      assertTrue(topics.contains("\"producers\":1"), topics);
    }
  }

  @Test
  void binaryReportsMakeTheCoordinatorListTheHotKeyAndTheClientRoutesIt(@TempDir Path dir)
      throws Exception {
    detectAndRoute("binary", dir);
  }

  @Test
  void jsonReportsWorkToo(@TempDir Path dir) throws Exception {
    detectAndRoute("json", dir);
  }

  @Test
  void aKilledCoordinatorLeavesTheLastGoodList(@TempDir Path dir) throws Exception {
    CoordinatorProcess coordinator = new CoordinatorProcess(dir);
    coordinator.start();
    open(coordinator.url(), "hotkey.routing.mode", "route");
    HotkeyClient client = partitioner.client();
    assertTrue(sendUntil(() -> client.listVersion("orders") > 0));
    long version = client.listVersion("orders");
    Set<Integer> before = hotPartitions(1000);
    assertTrue(before.size() > 1, "not salting with the list: " + before);
    coordinator.kill();
    long errors = client.listErrors();
    assertTrue(sendUntil(() -> client.listErrors() > errors + 3), "polls kept failing");
    assertEquals(version, client.listVersion("orders"));
    assertEquals(before, hotPartitions(1000), "fail-static: the same salts");
  }

  @Test
  void policyPlainRoutesColdAfterTheTtlAndSaltsAgainWhenTheCoordinatorIsBack(
      @TempDir Path dir) throws Exception {
    CoordinatorProcess coordinator = new CoordinatorProcess(dir);
    coordinator.start();
    open(coordinator.url(), "hotkey.routing.mode", "route", "hotkey.list.ttl.ms", "1000",
        "hotkey.list.expired.policy", "plain");
    HotkeyClient client = partitioner.client();
    assertTrue(sendUntil(() -> client.listVersion("orders") > 0));
    assertTrue(hotPartitions(1000).size() > 1, "not salting with the list");
    coordinator.kill();
    assertTrue(sendUntil(() -> hotPartitions(50).equals(Set.of(HOT_COLD))),
        "still salting after the TTL");
    // Same port, same data: the list comes back (versions are persisted) and salting resumes.
    try (CoordinatorProcess restarted = new CoordinatorProcess(dir, coordinator.port)) {
      restarted.start();
      assertTrue(sendUntil(() -> hotPartitions(200).size() > 1), "no salting after restart");
    }
  }
}
