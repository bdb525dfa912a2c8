package dev.hotkey.kafka.internals;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.hotkey.kafka.HotkeyStats;
import dev.hotkey.kafka.MergeContract;
import java.io.IOException;
import java.math.BigInteger;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Local tables (docs/CLIENT.md, "Local tables"; the C++ client's RouterLocalTables.* and
 * ClientLocalTables.* tests): what the last list tells them (never_salt prefixes), the mark of
 * their versions (2^63 + V), lists at that mark refused; the router's side (set, route, mark,
 * count, drop, refuse); and the client against a loopback coordinator peer (unreachable and
 * back, `stale` answers, a fresh list, denies, never_salt, no list state known, off).
 */
class LocalTablesTest {
  private static final int PARTITIONS = 12;
  private static final Cluster CLUSTER = Lists.cluster("orders", PARTITIONS);
  private final List<AutoCloseable> closing = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closing.size() - 1; i >= 0; i--) {
      closing.get(i).close();
    }
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String withNeverSalt(String prefixes) throws Exception {
    String json = Lists.listJson("orders", 4, 12, "listed", 1);
    return json.replace(",\"updated_at_ms\"",
        ",\"never_salt\":[" + prefixes + "],\"updated_at_ms\"");
  }

  @Test
  void neverSaltPrefixesAreReadAndCheckedLikeCpp() throws Exception {
    HotKeyList l = HotKeyList.parse(withNeverSalt("{\"key\":\"account:\"},{\"key_b64\":\"AP8=\"}"));
    assertEquals(2, l.neverSalt.size());
    assertArrayEquals(b("account:"), l.neverSalt.get(0));
    assertArrayEquals(new byte[] {0, (byte) 0xff}, l.neverSalt.get(1));
    assertTrue(HotKeyList.parse(Lists.listJson("orders", 4, 12, "listed", 1)).neverSalt.isEmpty());
    // The refusals of common/src/hotkey_list.cc, word for word.
    DecodeException empty = assertThrows(DecodeException.class,
        () -> HotKeyList.parse(withNeverSalt("{\"key\":\"a\"},{\"key\":\"\"}")));
    assertEquals("never_salt[1].key: must not be empty", empty.getMessage());
    DecodeException dup = assertThrows(DecodeException.class,
        () -> HotKeyList.parse(withNeverSalt("{\"key\":\"a\"},{\"key\":\"b\"},{\"key\":\"a\"}")));
    assertEquals("never_salt[2].key: duplicate of never_salt[0]", dup.getMessage());
    DecodeException notObject = assertThrows(DecodeException.class,
        () -> HotKeyList.parse(withNeverSalt("\"a\"")));
    assertEquals("never_salt[0]: must be an object", notObject.getMessage());
  }

  @Test
  void theMarkIsTwoToTheSixtyThreePlusTheListVersion() {
    long v = MergeContract.LOCAL_TABLE_VERSION_BIT | 4;
    assertEquals("9223372036854775812", Long.toUnsignedString(v));
    assertTrue(MergeContract.isLocalTableVersion(v));
    assertEquals(4, MergeContract.listVersionOf(v));
    assertFalse(MergeContract.isLocalTableVersion((3L << 32) | 1));
    assertEquals((3L << 32) | 1, MergeContract.listVersionOf((3L << 32) | 1));
  }

  @Test
  void listsAtTheLocalMarkAreRefused() throws Exception {
    TopicRouter r = new TopicRouter("orders", new Sampler(16, false, 1.0, 0));
    assertTrue(r.publish(Lists.list("orders", 4, 12, "listed", 1)));
    // Valid lists (the decoder takes any u64), which no coordinator issues: never routed with.
    HotKeyList mark = Lists.list("orders", Long.MIN_VALUE, 12, "listed", 1);
    HotKeyList top = Lists.list("orders", -1L, 12, "listed", 1);
    assertFalse(r.publish(mark));
    assertFalse(r.publish(top));
    assertEquals(4, r.version());
    assertEquals("version 9223372036854775808 is at or above 2^63, the range that marks a"
        + " producer's local table (no coordinator issues it)", HotkeyClient.refusal(r, mark));
    assertTrue(r.publish(Lists.list("orders", Long.MAX_VALUE, 12, "listed", 1)));
  }

  // ---- the router (TopicRouter, RoutingTable) ------------------------------------------------

  /** A window of `cold` even records and `key` at `records`, planned for 12 partitions. */
  private static TopicRouter.LocalTables planned(long base, String key, long records) {
    LocalPlan.Input in = new LocalPlan.Input();
    in.partitions = PARTITIONS;
    in.partitionCounts = new long[PARTITIONS];
    java.util.Arrays.fill(in.partitionCounts, 500);
    in.partitionCounts[Hashes.partitionFor(HashFamily.MURMUR2, b(key), PARTITIONS)] += records;
    in.total = 6000 + records;
    in.sketchTotal = in.total;
    in.items.add(new Report.Item(b(key), records, 0));
    LocalPlan plan = LocalPlan.plan(in);
    assertEquals(1, plan.keys.size());
    return new TopicRouter.LocalTables(base, PARTITIONS, plan.keys);
  }

  private static TopicRouter router(long version) throws Exception {
    TopicRouter r = new TopicRouter("orders", new Sampler(16, false, 1.0, 0));
    r.observePartitions(PARTITIONS);
    if (version != 0) {
      assertTrue(r.publish(Lists.list("orders", version, PARTITIONS, "listed", 1, 1, 1, 1)));
    }
    return r;
  }

  private static String header(Header h) {
    return new String(h.value(), StandardCharsets.US_ASCII);
  }

  @Test
  void localKeysRouteOverTheirTableAndTheTableIsMarked() throws Exception {
    TopicRouter r = router(4);
    TopicRouter.LocalTables tables = planned(4, "surge", 6000);
    assertTrue(r.setLocalTables(tables, r.localGeneration()));
    assertEquals(1, r.localTablesSet());
    RoutingTable t = r.tableFor(PARTITIONS);
    assertEquals(MergeContract.LOCAL_TABLE_VERSION_BIT | 4, t.version);
    assertEquals("9223372036854775812", header(t.versionHeader));
    RoutingTable.Entry surge = t.find("surge");
    assertTrue(surge != null && surge.salts.length >= 6, "the local key is in the table");
    // Its salts are the local table's, each on its partition, with the marked headers.
    Set<Integer> parts = new HashSet<>();
    for (int i = 0; i < 300; i++) {
      int idx = t.pickWrr(surge);
      int p = surge.partitions[idx];
      assertEquals(p, Hashes.partitionFor(HashFamily.MURMUR2, b(surge.saltedText[idx]),
          PARTITIONS));
      assertEquals("9223372036854775812", header(surge.mergeHeaders[idx].lastHeader(
          MergeContract.VERSION_HEADER)));
      parts.add(p);
    }
    assertTrue(parts.size() >= 6, "spread over " + parts);
    assertEquals(300, r.localSalted());
    // The list's keys keep their salts, and carry the mark too while the table is local.
    RoutingTable.Entry listed = t.find("listed");
    assertEquals(4, listed.salts.length);
    assertEquals("9223372036854775812", header(listed.mergeHeaders[0].lastHeader(
        MergeContract.VERSION_HEADER)));
    assertEquals(null, t.find("user-1"));
  }

  @Test
  void aFreshListATombstoneAndADropEachEndTheLocalTable() throws Exception {
    TopicRouter r = router(4);
    assertTrue(r.setLocalTables(planned(4, "surge", 6000), r.localGeneration()));
    RoutingTable t = r.tableFor(PARTITIONS);
    for (int i = 0; i < 50; i++) {
      t.pickWrr(t.find("surge"));
    }
    // A fresh list wins at once: no local key, the list's version, unmarked.
    assertTrue(r.publish(Lists.list("orders", 5, PARTITIONS, "listed", 1, 1)));
    assertEquals(null, r.localTables());
    assertEquals(5, r.tableFor(PARTITIONS).version);
    assertEquals(null, r.tableFor(PARTITIONS).find("surge"));
    assertEquals(50, r.localSalted(), "picks of a table no longer installed still count");
    // A tombstone too.
    assertTrue(r.setLocalTables(planned(5, "surge", 6000), r.localGeneration()));
    assertTrue(r.removeList());
    assertEquals(null, r.localTables());
    assertEquals(null, r.tableFor(PARTITIONS).find("surge"));
    // And a drop (contact back): on no list, the mark is 2^63 + 0.
    assertTrue(r.setLocalTables(planned(0, "surge", 6000), r.localGeneration()));
    assertEquals(MergeContract.LOCAL_TABLE_VERSION_BIT, r.tableFor(PARTITIONS).version);
    assertTrue(r.dropLocalTables());
    assertFalse(r.dropLocalTables());
    assertEquals(null, r.tableFor(PARTITIONS).find("surge"));
    assertEquals(3, r.localTablesSet());
  }

  @Test
  void tablesFromAStaleViewOrNotVerifiedAreRefused() throws Exception {
    TopicRouter r = router(4);
    TopicRouter.LocalTables good = planned(4, "surge", 6000);
    // Planned before a list came in: the generation moved.
    long before = r.localGeneration();
    assertTrue(r.publish(Lists.list("orders", 5, PARTITIONS, "listed", 1, 1)));
    assertFalse(r.setLocalTables(planned(5, "surge", 6000), before));
    // On another list version than the topic's.
    assertFalse(r.setLocalTables(good, r.localGeneration()));
    // A salt that does not land where the table says.
    HotKeyList.HotKey k = planned(5, "surge", 6000).keys.get(0);
    List<HotKeyList.Salt> tampered = new ArrayList<>(k.salts);
    HotKeyList.Salt s0 = tampered.get(0);
    tampered.set(0, new HotKeyList.Salt(s0.salt + 1, s0.partition, s0.weight));
    assertFalse(r.setLocalTables(new TopicRouter.LocalTables(5, PARTITIONS,
        List.of(new HotKeyList.HotKey(k.key, tampered, "local"))), r.localGeneration()));
    // A key the list salts.
    assertFalse(r.setLocalTables(planned(5, "listed", 6000), r.localGeneration()));
    // Planned for another partition count than the live one.
    LocalPlan.Input in = new LocalPlan.Input();
    in.partitions = 8;
    in.partitionCounts = new long[8];
    in.partitionCounts[Hashes.partitionFor(HashFamily.MURMUR2, b("surge"), 8)] = 800;
    in.total = 800;
    in.sketchTotal = 800;
    in.items.add(new Report.Item(b("surge"), 800, 0));
    assertFalse(r.setLocalTables(new TopicRouter.LocalTables(5, 8, LocalPlan.plan(in).keys),
        r.localGeneration()));
    assertEquals(0, r.localTablesSet());
    assertEquals(5, r.tableFor(PARTITIONS).version);
    assertTrue(r.setLocalTables(planned(5, "surge", 6000), r.localGeneration()));
  }

  @Test
  void aNewPartitionCountRoutesTheLocalKeyColdUntilReplanned() throws Exception {
    TopicRouter r = router(4);
    assertTrue(r.setLocalTables(planned(4, "surge", 6000), r.localGeneration()));
    RoutingTable t16 = r.tableFor(16);
    assertEquals(null, t16.find("surge"));
    assertEquals(4, t16.version);
    assertTrue(t16.find("listed") != null);
    assertTrue(r.tableFor(PARTITIONS).find("surge") != null);
  }

  /** Local picks counted exactly under each policy from 4 threads while tables are swapped. */
  @Test
  void locallySaltedRecordsAreCountedExactlyFromEveryThread() throws Exception {
    for (String policy : List.of("wrr", "value_hash", "random")) {
      Plugins p = Plugins.open(Plugins.configs("local-count-" + policy,
          "hotkey.routing.mode", "route", "hotkey.salt.policy", policy));
      closing.add(p);
      HotkeyClient c = p.partitioner.client();
      TopicRouter r = c.topic("orders");
      r.observePartitions(PARTITIONS);
      assertTrue(c.published(r, Lists.list("orders", 4, PARTITIONS, "listed", 1, 1)));
      assertTrue(r.setLocalTables(planned(4, "surge", 6000), r.localGeneration()));
      AtomicLong sent = new AtomicLong();
      AtomicBoolean go = new AtomicBoolean(true);
      List<Thread> threads = new ArrayList<>();
      for (int n = 0; n < 4; n++) {
        Thread th = new Thread(() -> {
          byte[] key = b("surge");
          int i = 0;
          while (go.get() || i < 1000) {
            byte[] value = {(byte) i, (byte) (i >> 8)};
            p.partitioner.partition("orders", "surge", key, null, value, CLUSTER);
            p.partitioner.partition("orders", "listed", b("listed"), null, value, CLUSTER);
            i++;
          }
          sent.addAndGet(i);
        });
        th.start();
        threads.add(th);
      }
      for (int round = 0; round < 5; round++) {
        Thread.sleep(20);
        // Re-planned tables (a new generation) and a fresh list dropping them, mid-traffic.
        assertTrue(r.setLocalTables(planned(r.version(), "surge", 6000 + round),
            r.localGeneration()), policy);
      }
      go.set(false);
      for (Thread th : threads) {
        th.join();
      }
      long salted = r.localSalted();
      HotkeyStats.TopicStats ts = c.stats().topic("orders");
      assertEquals(sent.get(), salted, policy + ": every record of the local key counted once");
      assertEquals(salted, ts.localSalted(), policy);
      assertEquals(6, ts.localTables(), policy);
      assertEquals(1, ts.localKeys(), policy);
      assertEquals(2 * sent.get(), ts.salted(), policy + ": the list's key too");
    }
  }

  // ---- the client against a loopback coordinator peer ----------------------------------------

  /**
   * A coordinator peer: POST /v1/hotkeys/subscribe answers with the lists it serves newer than
   * asked and its `stale` set (parked up to 300 ms for a change); JSON report batches are
   * accepted and kept. stop() closes it (connection refused), start() opens it on its port.
   */
  private static final class Peer implements AutoCloseable {
    private HttpServer server;
    private int port;
    private final Map<String, String> lists = new HashMap<>(); // guarded by this
    private final Map<String, Long> versions = new HashMap<>(); // guarded by this
    private List<String> stale = List.of(); // guarded by this
    private boolean stopping; // guarded by this
    final List<Map<?, ?>> reports = new CopyOnWriteArrayList<>();

    synchronized void serve(String topic, long version, String json) {
      lists.put(topic, json);
      versions.put(topic, version);
      notifyAll();
    }

    synchronized void setStale(List<String> topics) {
      stale = topics;
      notifyAll();
    }

    String url() {
      return "http://127.0.0.1:" + port;
    }

    void start() throws Exception {
      synchronized (this) {
        stopping = false;
      }
      long deadline = System.nanoTime() + 10_000_000_000L;
      for (;;) {
        try {
          server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
          break;
        } catch (BindException e) {
          if (System.nanoTime() > deadline) {
            throw e;
          }
          Thread.sleep(50); // the old socket may linger for a moment
        }
      }
      port = server.getAddress().getPort();
      server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
      server.createContext("/v1/hotkeys/subscribe", this::subscribe);
      server.createContext("/v1/reports/batch", this::reports);
      server.start();
    }

    void stop() {
      synchronized (this) {
        stopping = true;
        notifyAll();
      }
      if (server != null) {
        server.stop(0);
        server = null;
      }
    }

    @Override
    public void close() {
      stop();
    }

    private static void answer(HttpExchange ex, int status, String body) throws IOException {
      byte[] b = body.getBytes(StandardCharsets.UTF_8);
      ex.getResponseHeaders().add("Content-Type", "application/json");
      ex.sendResponseHeaders(status, b.length);
      ex.getResponseBody().write(b);
      ex.close();
    }

    private String newer(List<?> topics) {
      StringBuilder out = new StringBuilder();
      for (Object o : topics) {
        Map<?, ?> t = (Map<?, ?>) o;
        String name = (String) t.get("topic");
        long since = ((Json.Num) t.get("since")).integer.longValue();
        Long v = versions.get(name);
        if (v != null && Long.compareUnsigned(v, since) > 0) {
          out.append(out.length() > 0 ? "," : "").append(lists.get(name));
        }
      }
      return out.toString();
    }

    private void subscribe(HttpExchange ex) throws IOException {
      String answer;
      try {
        Map<?, ?> body = (Map<?, ?>) Json.parse(
            new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
        List<?> topics = (List<?>) body.get("topics");
        long wait = Math.min(((Json.Num) body.get("wait_ms")).integer.longValue(), 300);
        synchronized (this) {
          List<String> staleThen = stale;
          long deadline = System.nanoTime() + wait * 1_000_000;
          while (!stopping && newer(topics).isEmpty() && stale.equals(staleThen)
              && System.nanoTime() < deadline) {
            wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
          }
          if (stopping) {
            ex.close();
            return;
          }
          StringBuilder st = new StringBuilder();
          for (String t : stale) {
            st.append(st.length() > 0 ? "," : "").append('"').append(t).append('"');
          }
          answer = "{\"lists\":[" + newer(topics) + "],\"stale\":[" + st + "]}";
        }
      } catch (Json.SyntaxError | InterruptedException e) {
        answer(ex, 400, "{\"error\":\"bad request\"}");
        return;
      }
      answer(ex, 200, answer);
    }

    private void reports(HttpExchange ex) throws IOException {
      try {
        Map<?, ?> body = (Map<?, ?>) Json.parse(
            new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
        StringBuilder results = new StringBuilder();
        for (Object r : (List<?>) body.get("reports")) {
          reports.add((Map<?, ?>) r);
          results.append(results.length() > 0 ? "," : "").append("{\"status\":200}");
        }
        answer(ex, 200, "{\"results\":[" + results + "]}");
      } catch (Json.SyntaxError e) {
        answer(ex, 400, "{\"error\":\"bad request\"}");
      }
    }

    /** The list_version of every report received, as unsigned 64-bit values. */
    List<BigInteger> reportVersions() {
      List<BigInteger> out = new ArrayList<>();
      for (Map<?, ?> r : reports) {
        out.add(((Json.Num) r.get("list_version")).integer);
      }
      return out;
    }
  }

  /** A producer's two plugins (rekey mode) on a peer serving version 4 of "orders". */
  private final class Producer implements AutoCloseable {
    final Plugins plugins;
    final String clientId;
    private final Traffic traffic = new Traffic();

    Producer(String clientId, String url, String... props) {
      this.clientId = clientId;
      Map<String, Object> configs = Plugins.configs(clientId, "hotkey.coordinator.url", url,
          "hotkey.poll.wait.ms", "1000", "hotkey.report.interval.ms", "100",
          "hotkey.backoff.initial.ms", "10", "hotkey.backoff.max.ms", "100",
          "hotkey.http.timeout.ms", "1000", "hotkey.list.stale.ms", "300",
          "hotkey.report.format", "json");
      for (int i = 0; i < props.length; i += 2) {
        configs.put(props[i], props[i + 1]);
      }
      plugins = Plugins.open(configs);
      closing.add(this);
    }

    HotkeyClient client() {
      return plugins.partitioner.client();
    }

    HotkeyStats.TopicStats stats() {
      HotkeyStats.TopicStats t = plugins.partitioner.stats().topic("orders");
      return t != null ? t : new HotkeyStats.TopicStats("orders", 0, -1, 0, 0, false, 0, 0, 0,
          0, 1, false, 0, 0, 0);
    }

    /** One record as KafkaProducer sends it: the interceptor, then the partitioner. */
    Sent send(String key) {
      ProducerRecord<Object, Object> rec =
          plugins.interceptor.onSend(new ProducerRecord<>("orders", key, "v"));
      String k = (String) rec.key();
      int p = plugins.partitioner.partition("orders", k, b(k), rec.value(), b("v"), CLUSTER);
      Header v = rec.headers().lastHeader(MergeContract.VERSION_HEADER);
      return new Sent(k, p, v == null ? null : header(v));
    }

    /** A sending thread: half of its records on {@code hot}, the rest over 500 keys. */
    void traffic(String hot) {
      traffic.start(this::send, hot);
    }

    void stopTraffic() {
      traffic.close();
    }

    @Override
    public void close() {
      stopTraffic();
      plugins.close();
    }
  }

  private record Sent(String key, int partition, String version) {}

  private static boolean eventually(BooleanSupplier f) throws InterruptedException {
    return TestData.eventually(20, f);
  }

  private static int clients;

  private Peer peer(String listed) throws Exception {
    Peer p = new Peer();
    closing.add(p);
    p.start();
    p.serve("orders", 4, listed);
    return p;
  }

  private Producer producer(Peer peer, String... props) throws Exception {
    Producer p = new Producer("local-tables-" + (++clients), peer.url(), props);
    p.send("listed");
    assertTrue(eventually(() -> p.client().listVersion("orders") == 4), "no list");
    return p;
  }

  private static String baseList() {
    return Lists.listJson("orders", 4, PARTITIONS, "listed", 1, 1, 1, 1);
  }

  @Test
  void anUnreachableCoordinatorsSurgeIsSaltedLocallyUntilContactIsBack() throws Exception {
    Peer peer = peer(baseList());
    Producer c = producer(peer);
    c.traffic("surge");
    // With the coordinator there, the client leaves the key to it (this peer never lists it).
    Thread.sleep(600);
    assertFalse(c.stats().stale());
    assertEquals(0, c.stats().localKeys());
    assertEquals(null, c.send("surge").version());

    peer.stop(); // connection refused from now on
    assertTrue(eventually(() -> c.stats().localKeys() == 1), "no local table");
    assertTrue(c.stats().stale());
    Set<Integer> spread = new HashSet<>();
    for (int i = 0; i < 300; i++) {
      Sent s = c.send("surge");
      assertEquals("9223372036854775812", s.version(), "marked 2^63 + 4");
      assertTrue(s.key().startsWith("surge#"), s.key());
      assertEquals(Hashes.partitionFor(HashFamily.MURMUR2, b(s.key()), PARTITIONS),
          s.partition());
      spread.add(s.partition());
    }
    assertTrue(spread.size() >= 6, "half of the records on one key, spread over " + spread);
    assertTrue(c.send("listed").key().startsWith("listed#"), "the list's keys keep salting");
    assertEquals("user-7", c.send("user-7").key());
    assertTrue(eventually(() -> c.stats().localSalted() > 1000));
    assertEquals(1, c.stats().localTables());
    assertEquals(1, TestLog.lines(c.clientId, "the hot-key list (version 4) is stale").size());
    assertEquals(1, TestLog.lines(c.clientId, "local table set on list version 4: 1 key(s)")
        .size());

    peer.start(); // the same list: contact alone ends the local table
    assertTrue(eventually(() -> c.stats().localKeys() == 0), "the local table stayed");
    assertFalse(c.stats().stale());
    assertEquals("4", c.send("listed").version());
    assertEquals("surge", c.send("surge").key());
    // The reports of the outage's windows reached the coordinator once it was back, marked;
    // the windows routed with the list alone since carry its version.
    BigInteger marked = BigInteger.ONE.shiftLeft(63).add(BigInteger.valueOf(4));
    assertTrue(eventually(() -> {
      List<BigInteger> v = peer.reportVersions();
      return v.contains(marked) && v.get(v.size() - 1).equals(BigInteger.valueOf(4));
    }), peer.reportVersions().toString());
  }

  @Test
  void aFreshListReplacesTheLocalTable() throws Exception {
    Peer peer = peer(baseList());
    Producer c = producer(peer);
    c.traffic("surge");
    peer.setStale(List.of("orders")); // the owner is gone: stale at once, in contact
    assertTrue(eventually(() -> c.stats().localKeys() == 1), "no local table");
    assertTrue(c.stats().stale());
    assertEquals(1, TestLog.lines(c.clientId, "the coordinator says the topic's owner is gone")
        .size());
    // The new owner publishes: its list wins at once, whatever the stale set still says.
    long fresh = (2L << 32) | 1;
    peer.serve("orders", fresh, Lists.listJson("orders", fresh, PARTITIONS, "surge", 1, 1, 1, 1,
        1, 1));
    assertTrue(eventually(() -> c.client().listVersion("orders") == fresh));
    Sent s = c.send("surge");
    assertEquals(Long.toString(fresh), s.version() == null ? null
        : Long.toString(MergeContract.listVersionOf(Long.parseUnsignedLong(s.version()))));
    TopicRouter.LocalTables local = c.client().topic("orders").localTables();
    if (local != null) { // a new local table may follow, planned on the new list
      assertEquals(fresh, local.baseVersion);
      for (HotKeyList.HotKey k : local.keys) {
        assertFalse(new String(k.key, StandardCharsets.UTF_8).equals("surge"));
      }
    }
    peer.setStale(List.of());
    assertTrue(eventually(() -> !c.stats().stale()), "still stale");
    assertEquals(0, c.stats().localKeys());
    assertEquals(Long.toString(fresh), c.send("surge").version());
  }

  @Test
  void contactBackDropsTheLocalTableAtOnceWithoutWaitingForAWindow() throws Exception {
    // Report windows an hour long: only the surge's early report (and its follow-up) drain a
    // window, so only the list source can end the local table.
    Peer peer = peer(baseList());
    Producer c = producer(peer, "hotkey.report.interval.ms", "3600000");
    peer.setStale(List.of("orders"));
    assertTrue(eventually(() -> c.stats().stale()));
    c.traffic("surge");
    assertTrue(eventually(() -> c.stats().localKeys() == 1), "no local table");
    Thread.sleep(300); // the follow-up report went too
    peer.setStale(List.of());
    assertTrue(eventually(() -> c.stats().localKeys() == 0), "the local table stayed");
    assertEquals("surge", c.send("surge").key());
  }

  @Test
  void deniedAndNeverSaltKeysStayHomeAndNothingIsSaltedWithoutAListState() throws Exception {
    String list = baseList().replace("\"denied\":[]",
        "\"denied\":[{\"key\":\"acct-1\"}],\"never_salt\":[{\"key\":\"order:\"}]");
    Peer peer = peer(list);
    Producer c = producer(peer);
    c.traffic("acct-1");
    c.traffic("order:9");
    c.traffic("surge");
    peer.setStale(List.of("orders"));
    assertTrue(eventually(() -> c.stats().localKeys() >= 1), "no local table");
    Thread.sleep(500); // a few more windows
    TopicRouter.LocalTables local = c.client().topic("orders").localTables();
    assertEquals(1, local.keys.size());
    assertArrayEquals(b("surge"), local.keys.get(0).key);
    assertEquals("acct-1", c.send("acct-1").key());
    assertEquals("order:9", c.send("order:9").key());
    c.stopTraffic();

    // A client that never reached its coordinator knows nothing the list denies: it stays
    // stale and plain, whatever it sees hot.
    peer.stop();
    Producer lost = new Producer("local-tables-" + (++clients), peer.url());
    lost.traffic("surge");
    assertTrue(eventually(() -> lost.stats().stale()), "not stale");
    Thread.sleep(800);
    assertEquals(0, lost.stats().localKeys());
    assertEquals("surge", lost.send("surge").key());
  }

  @Test
  void staleMsZeroTurnsThemOff() throws Exception {
    Peer peer = peer(baseList());
    Producer c = producer(peer, "hotkey.list.stale.ms", "0");
    c.traffic("surge");
    peer.stop();
    long errors = c.client().listErrors();
    assertTrue(eventually(() -> c.client().listErrors() > errors + 3));
    Thread.sleep(800);
    assertFalse(c.stats().stale());
    assertEquals(0, c.stats().localKeys());
    assertEquals("surge", c.send("surge").key());
  }

  @Test
  void theMetricsShowIt() throws Exception {
    Peer peer = peer(baseList());
    Producer c = producer(peer);
    c.traffic("surge");
    peer.setStale(List.of("orders"));
    assertTrue(eventually(() -> c.stats().localSalted() > 100));
    Map<String, Double> m = new HashMap<>();
    c.client().metrics().metrics().forEach((name, metric) -> {
      if (name.group().equals(ClientMetrics.TOPIC_GROUP)) {
        m.put(name.name(), ((Number) metric.metricValue()).doubleValue());
      }
    });
    assertEquals(1.0, m.get("list-stale"));
    assertEquals(1.0, m.get("local-keys"));
    assertTrue(m.get("records-local-salted-total") > 100, m.toString());
    assertTrue(m.get("local-tables-total") >= 1, m.toString());
  }
}
