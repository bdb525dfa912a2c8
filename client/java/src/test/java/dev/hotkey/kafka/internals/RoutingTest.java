package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyConfig;
import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.MergeContract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Routing decisions of the partitioner and the interceptor, without a coordinator or broker. */
class RoutingTest {
  private HotkeyPartitioner partitioner;
  private HotkeyInterceptor interceptor;
  private static int clients;

  private Plugins plugins;

  private void open(String... props) {
    plugins = Plugins.open(Plugins.configs("routing-test-" + (++clients), props));
    interceptor = plugins.interceptor;
    partitioner = plugins.partitioner;
  }

  @AfterEach
  void close() {
    if (plugins != null) {
      plugins.close();
    }
  }

  private int partition(String topic, String key, Cluster cluster) {
    byte[] bytes = key == null ? null : key.getBytes(StandardCharsets.UTF_8);
    return partitioner.partition(topic, key, bytes, "v", new byte[] {1}, cluster);
  }

  @Test
  void partitionerAndInterceptorShareOneClient() {
    open("hotkey.routing.mode", "route");
    assertSame(partitioner.client(), interceptor.client());
  }

  @Test
  void coldKeysGoWhereKafkasBuiltInPartitionerSendsThem() throws Exception {
    open("hotkey.routing.mode", "route");
    Cluster cluster = Lists.cluster("orders", 24);
    partitioner.client().topic("orders").publish(Lists.list("orders", 3, 24, "hot", 5000, 5000));
    for (int i = 0; i < 20000; i++) {
      String key = "key-" + i;
      assertEquals(BuiltInPartitioner.partitionForKey(key.getBytes(StandardCharsets.UTF_8), 24),
          partition("orders", key, cluster), key);
    }
    // The empty key is hashed, as Kafka does.
    assertEquals(BuiltInPartitioner.partitionForKey(new byte[0], 24), partition("orders", "", cluster));
  }

  @Test
  void routeModeSpreadsAHotKeyOverItsSaltsByWeightExactly() throws Exception {
    open("hotkey.routing.mode", "route");
    Cluster cluster = Lists.cluster("orders", 12);
    HotKeyList list = Lists.list("orders", 5, 12, "hot", 5000, 3000, 2000);
    partitioner.client().topic("orders").publish(list);
    Map<Integer, Integer> counts = new HashMap<>();
    for (int i = 0; i < 10 * 10; i++) {
      counts.merge(partition("orders", "hot", cluster), 1, Integer::sum);
    }
    // Weights 5000:3000:2000 reduce to a 10-step sequence: any 100 picks are exact.
    assertEquals(Map.of(list.keys.get(0).salts.get(0).partition, 50,
        list.keys.get(0).salts.get(1).partition, 30, list.keys.get(0).salts.get(2).partition, 20),
        counts);
  }

  @Test
  void eachTableStartsItsRoundRobinAtARandomStep() throws Exception {
    open("hotkey.routing.mode", "route");
    Cluster cluster = Lists.cluster("orders", 12);
    Set<Integer> firsts = new HashSet<>();
    for (int v = 1; v <= 40; v++) {
      partitioner.client().topic("orders")
          .publish(Lists.list("orders", v, 12, "hot", 1, 1, 1, 1, 1, 1));
      firsts.add(partition("orders", "hot", cluster));
    }
    // Started at the head, every table would pick the first salt first.
    assertTrue(firsts.size() >= 3, "first picks of 40 tables: " + firsts);
  }

  @Test
  void versionsNeverGoBack() throws Exception {
    open("hotkey.routing.mode", "route");
    TopicRouter r = partitioner.client().topic("orders");
    assertTrue(r.publish(Lists.list("orders", 9, 12, "hot", 1, 1)));
    assertFalse(r.publish(Lists.list("orders", 8, 12, "other", 1, 1)));
    assertFalse(r.publish(Lists.list("orders", 9, 12, "other", 1, 1)));
    assertEquals(9, r.version());
    assertNotNull(r.table().find("hot"));
    assertNull(r.table().find("other"));
    // A tombstone drops the list but not the floor.
    assertTrue(r.removeList());
    assertFalse(r.publish(Lists.list("orders", 9, 12, "other", 1, 1)));
    assertTrue(r.publish(Lists.list("orders", 10, 12, "other", 1, 1)));
  }

  @Test
  void aListForAnotherPartitionCountGetsVerifiedSaltsForTheLiveCount() throws Exception {
    open("hotkey.routing.mode", "route");
    partitioner.client().topic("orders").publish(Lists.list("orders", 2, 12, "hot", 1, 1, 1, 1));
    Cluster cluster = Lists.cluster("orders", 24);
    Set<Integer> seen = new HashSet<>();
    for (int i = 0; i < 400; i++) {
      seen.add(partition("orders", "hot", cluster));
    }
    Set<Integer> expected = new HashSet<>();
    for (HotKeyList.Salt s : Salts.plan(HashFamily.MURMUR2,
        "hot".getBytes(StandardCharsets.UTF_8), 4, 24, Salts.DEFAULT_SEPARATOR)) {
      expected.add(s.partition);
    }
    assertEquals(expected, seen);
    assertEquals(24, partitioner.client().topic("orders").table().partitions);
  }

  @Test
  void rekeyModeRewritesTheKeyAddsTheMergeHeadersAndLandsOnTheSaltsPartition() throws Exception {
    open();
    Cluster cluster = Lists.cluster("orders", 12);
    HotKeyList list = Lists.list("orders", 7, 12, "hot", 1, 1, 1);
    partitioner.client().topic("orders").publish(list);
    Map<Integer, Integer> bySalt = new HashMap<>();
    for (HotKeyList.Salt s : list.keys.get(0).salts) {
      bySalt.put(s.salt, s.partition);
    }
    Set<Integer> partitions = new HashSet<>();
    for (int i = 0; i < 30; i++) {
      ProducerRecord<Object, Object> in = new ProducerRecord<>("orders", "hot", "value");
      ProducerRecord<Object, Object> out = interceptor.onSend(in);
      assertNotSame(in, out);
      String key = (String) out.key();
      assertTrue(key.startsWith("hot#"), key);
      int salt = Integer.parseInt(key.substring(4));
      Header h = out.headers().lastHeader("hotkey.salt");
      assertEquals(Integer.toString(salt), new String(h.value(), StandardCharsets.US_ASCII));
      assertEquals("7", new String(out.headers().lastHeader("hotkey.version").value(),
          StandardCharsets.US_ASCII));
      int p = partitioner.partition("orders", key, key.getBytes(StandardCharsets.UTF_8),
          out.value(), new byte[1], cluster);
      assertEquals(bySalt.get(salt), p);
      partitions.add(p);
    }
    assertEquals(3, partitions.size());
    // Cold records pass through untouched, without headers.
    ProducerRecord<Object, Object> cold = new ProducerRecord<>("orders", "cold", "value");
    assertSame(cold, interceptor.onSend(cold));
    // The sampler counted the rekeyed records under their logical key, as salted.
    long[] c = partitioner.client().topic("orders").sampler.counters();
    assertEquals(30, c[0]);
    assertEquals(0, c[1]);
  }

  @Test
  void rekeyModeKeepsTheRecordsHeadersAndGivesEveryRecordHeadersOfItsOwn() throws Exception {
    open();
    partitioner.client().topic("orders").publish(Lists.list("orders", 7, 12, "hot", 1, 1));
    ProducerRecord<Object, Object> in = new ProducerRecord<>("orders", "hot", "v");
    in.headers().add("trace", new byte[] {1});
    ProducerRecord<Object, Object> out = interceptor.onSend(in);
    Header[] h = out.headers().toArray();
    assertEquals(3, h.length);
    assertEquals("trace", h[0].key());
    assertEquals("hotkey.salt", h[1].key());
    assertEquals("hotkey.version", h[2].key());
    // Records without headers of their own share the table's header values, never its list:
    // adding to one record's headers changes no other record's.
    ProducerRecord<Object, Object> a = interceptor.onSend(new ProducerRecord<>("orders", "hot", "v"));
    ProducerRecord<Object, Object> b = interceptor.onSend(new ProducerRecord<>("orders", "hot", "v"));
    ProducerRecord<Object, Object> c = interceptor.onSend(new ProducerRecord<>("orders", "hot", "v"));
    assertEquals(a.key(), c.key()); // two salts: the round robin comes back
    a.headers().add("extra", new byte[] {2});
    assertEquals(3, a.headers().toArray().length);
    assertEquals(2, b.headers().toArray().length);
    assertEquals(2, c.headers().toArray().length);
  }

  /**
   * Merge contract version 2 (the default): a record rekeyed by the list carries no merge header
   * (its application headers only); a cold key ending in {@code #<digits>} leaves as a copy
   * with {@code hotkey.unsalted} after its own headers; other cold records pass untouched.
   */
  @Test
  void rekeyModeOnContractVersion2MarksOnlyWhatTheSuffixCannotSay() throws Exception {
    open("hotkey.merge.contract", "2");
    partitioner.client().topic("orders").publish(Lists.list("orders", 7, 12, "hot", 1, 1));
    ProducerRecord<Object, Object> in = new ProducerRecord<>("orders", "hot", "v");
    in.headers().add("trace", new byte[] {1});
    ProducerRecord<Object, Object> out = interceptor.onSend(in);
    assertTrue(((String) out.key()).startsWith("hot#"), (String) out.key());
    Header[] h = out.headers().toArray();
    assertEquals(1, h.length);
    assertEquals("trace", h[0].key());
    assertEquals(0, interceptor.onSend(new ProducerRecord<>("orders", "hot", "v")).headers()
        .toArray().length);
    for (String key : new String[] {"order#7", "order#0", "a#4294967295"}) {
      ProducerRecord<Object, Object> cold = new ProducerRecord<>("orders", key, "v");
      cold.headers().add("trace", new byte[] {1});
      ProducerRecord<Object, Object> marked = interceptor.onSend(cold);
      assertNotSame(cold, marked, key);
      assertEquals(key, marked.key());
      Header[] m = marked.headers().toArray();
      assertEquals(2, m.length, key);
      assertEquals("trace", m[0].key());
      assertEquals(MergeContract.UNSALTED_HEADER, m[1].key());
      assertEquals(1, cold.headers().toArray().length, "the application's record is unchanged");
    }
    for (String key : new String[] {"cold", "order-7", "order#07", "a#4294967296", "#"}) {
      ProducerRecord<Object, Object> cold = new ProducerRecord<>("orders", key, "v");
      assertSame(cold, interceptor.onSend(cold), key);
    }
  }

  /** tests/data/vectors/merge_contract.json: the writer's marks of version 2, as the C++ client. */
  @Test
  void theSharedMergeContractMarksAreTheInterceptors() throws Exception {
    int unsalted = 0;
    for (Object o : TestData.list(TestData.vectors("merge_contract.json").get("marks"))) {
      Map<?, ?> v = TestData.map(o);
      if (TestData.num(v.get("contract")) != 2 || !"rekey".equals(v.get("mode"))) {
        continue; // the interceptor writes rekey mode; route mode has no interceptor work
      }
      byte[] key = TestData.hex(v.get("key"));
      byte[] sep = TestData.hex(v.get("separator"));
      List<?> headers = TestData.list(v.get("headers"));
      if (Boolean.TRUE.equals(v.get("salted"))) {
        boolean local = MergeContract.isLocalTableVersion(
            Long.parseUnsignedLong((String) v.get("version")));
        assertEquals(local ? List.of("hotkey.salt", "hotkey.version") : List.of(), headers,
            v.toString());
        continue;
      }
      boolean marked = headers.equals(List.of(MergeContract.UNSALTED_HEADER));
      assertEquals(marked, InterceptorCore.endsLikeSalted(key, sep), v.toString());
      assertEquals(marked, InterceptorCore.endsLikeSalted(new String(key, StandardCharsets.UTF_8),
          new String(sep, StandardCharsets.UTF_8)), v.toString());
      unsalted += marked ? 1 : 0;
    }
    assertTrue(unsalted >= 3, unsalted + " marked");
  }

  @Test
  void aListedTextKeyIsFoundAmongManyAndColdTextKeysAreNot() throws Exception {
    open();
    StringBuilder json = new StringBuilder("{\"topic\":\"orders\",\"version\":3,"
        + "\"partitions\":24,\"hash\":\"murmur2\",\"keys\":[");
    List<String> hot = new ArrayList<>();
    hot.add("");
    hot.add("h\u00e9\u6f22");
    for (int i = 0; i < 300; i++) {
      hot.add("user-" + i * 7);
    }
    for (int i = 0; i < hot.size(); i++) {
      json.append(i > 0 ? "," : "").append("{\"key\":");
      Json.writeString(json, hot.get(i));
      json.append(",\"salts\":[{\"salt\":0,\"partition\":")
          .append(Hashes.partitionFor(HashFamily.MURMUR2,
              Salts.saltedKey(hot.get(i).getBytes(StandardCharsets.UTF_8), Salts.DEFAULT_SEPARATOR, 0),
              24))
          .append(",\"weight\":10000}]}");
    }
    json.append("]}");
    partitioner.client().topic("orders").publish(HotKeyList.parse(json.toString()));
    RoutingTable t = partitioner.client().topic("orders").table();
    Set<String> hotSet = new HashSet<>(hot);
    for (String k : hot) {
      assertNotNull(t.find(k), k);
      assertSame(t.find(k), t.find(k.getBytes(StandardCharsets.UTF_8),
          Hashes.murmur2(k.getBytes(StandardCharsets.UTF_8)) & 0x7fffffff));
      // A new String object, as a producer's keys are: found by value.
      assertNotNull(t.find(new String(k.toCharArray())), k);
    }
    for (int i = 0; i < 3000; i++) {
      String k = "user-" + i;
      assertEquals(hotSet.contains(k), t.find(k) != null, k);
    }
  }

  @Test
  void onlyKeysEndingInTheSeparatorAndDigitsCanBeRekeyedOnes() {
    byte[] hash = {'#'};
    byte[] multi = "::".getBytes(StandardCharsets.UTF_8);
    assertTrue(InterceptorCore.maybeSalted("hot#0".getBytes(StandardCharsets.UTF_8), hash));
    assertTrue(InterceptorCore.maybeSalted("#4294967295".getBytes(StandardCharsets.UTF_8), hash));
    assertTrue(InterceptorCore.maybeSalted("a::17".getBytes(StandardCharsets.UTF_8), multi));
    assertFalse(InterceptorCore.maybeSalted("a:17".getBytes(StandardCharsets.UTF_8), multi));
    assertFalse(InterceptorCore.maybeSalted("customer-123".getBytes(StandardCharsets.UTF_8), hash));
    assertFalse(InterceptorCore.maybeSalted("hot#".getBytes(StandardCharsets.UTF_8), hash));
    assertFalse(InterceptorCore.maybeSalted("hot#12345678901".getBytes(StandardCharsets.UTF_8), hash));
    assertFalse(InterceptorCore.maybeSalted("0".getBytes(StandardCharsets.UTF_8), hash));
    assertFalse(InterceptorCore.maybeSalted(new byte[0], hash));
    for (int salt : new int[] {0, 9, 10, 65535, -1}) {
      assertTrue(InterceptorCore.maybeSalted(Salts.saltedKey(new byte[] {1, 2}, hash, salt), hash));
    }
  }

  @Test
  void aKeyPastTheTablesPrecomputeBudgetIsRekeyedAlike() throws Exception {
    open();
    // 4,000-byte key, a salt on each of 1,100 partitions: over the table's budget for
    // precomputed salted keys, so this one is salted per record.
    String big = "k".repeat(4000);
    int partitions = 1100;
    int[] weights = new int[partitions];
    java.util.Arrays.fill(weights, 1);
    HotKeyList list = Lists.list("orders", 9, partitions, big, weights);
    partitioner.client().topic("orders").publish(list);
    RoutingTable t = partitioner.client().topic("orders").table();
    assertNull(t.find(big).saltedText);
    Map<Integer, Integer> bySalt = new HashMap<>();
    for (HotKeyList.Salt salt : list.keys.get(0).salts) {
      bySalt.put(salt.salt, salt.partition);
    }
    Cluster cluster = Lists.cluster("orders", partitions);
    for (int i = 0; i < 20; i++) {
      ProducerRecord<Object, Object> in = new ProducerRecord<>("orders", big, "v");
      if (i % 2 == 1) {
        in.headers().add("trace", new byte[] {1});
      }
      ProducerRecord<Object, Object> out = interceptor.onSend(in);
      String key = (String) out.key();
      assertTrue(key.startsWith(big + "#"));
      int salt = Integer.parseInt(key.substring(big.length() + 1));
      assertEquals(Integer.toString(salt), new String(out.headers().lastHeader("hotkey.salt")
          .value(), StandardCharsets.US_ASCII));
      assertEquals("9", new String(out.headers().lastHeader("hotkey.version").value(),
          StandardCharsets.US_ASCII));
      assertEquals(i % 2 == 1 ? 3 : 2, out.headers().toArray().length);
      assertEquals(bySalt.get(salt), partitioner.partition("orders", key,
          key.getBytes(StandardCharsets.UTF_8), out.value(), new byte[1], cluster));
    }
    long[] c = partitioner.client().topic("orders").sampler.counters();
    assertEquals(20, c[0]);
  }

  @Test
  void rekeyModeWithHeadersOffAddsNoHeaders() throws Exception {
    open("hotkey.salt.headers", "false");
    partitioner.client().topic("orders").publish(Lists.list("orders", 7, 12, "hot", 1, 1));
    ProducerRecord<Object, Object> out =
        interceptor.onSend(new ProducerRecord<>("orders", "hot", "v"));
    assertNotEquals("hot", out.key());
    assertNull(out.headers().lastHeader("hotkey.salt"));
  }

  @Test
  void recordsWithoutAKeyStickToAPartitionForABatchThenMove() {
    open("batch.size", "100");
    Cluster cluster = Lists.cluster("orders", 12);
    int first = partitioner.partition("orders", null, null, "v", new byte[10], cluster);
    for (int i = 0; i < 8; i++) {
      assertEquals(first, partitioner.partition("orders", null, null, "v", new byte[10], cluster));
    }
    Set<Integer> seen = new HashSet<>();
    for (int i = 0; i < 2000; i++) {
      seen.add(partitioner.partition("orders", null, null, "v", new byte[10], cluster));
    }
    assertTrue(seen.size() > 6, "keyless records visited " + seen);
  }

  @Test
  void expiredPolicyPlainRoutesColdAndComesBack() throws Exception {
    open("hotkey.routing.mode", "route");
    Cluster cluster = Lists.cluster("orders", 12);
    TopicRouter r = partitioner.client().topic("orders");
    r.publish(Lists.list("orders", 4, 12, "hot", 1, 1, 1, 1));
    int cold = BuiltInPartitioner.partitionForKey("hot".getBytes(StandardCharsets.UTF_8), 12);
    r.setPlain(true);
    for (int i = 0; i < 20; i++) {
      assertEquals(cold, partition("orders", "hot", cluster));
    }
    r.setPlain(false);
    Set<Integer> seen = new HashSet<>();
    for (int i = 0; i < 20; i++) {
      seen.add(partition("orders", "hot", cluster));
    }
    assertEquals(4, seen.size());
  }
}
