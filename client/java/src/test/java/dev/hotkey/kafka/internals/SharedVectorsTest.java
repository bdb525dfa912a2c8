package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyConfig;
import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.MergeContract;

import static dev.hotkey.kafka.internals.TestData.dbl;
import static dev.hotkey.kafka.internals.TestData.hex;
import static dev.hotkey.kafka.internals.TestData.list;
import static dev.hotkey.kafka.internals.TestData.map;
import static dev.hotkey.kafka.internals.TestData.num;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;

/**
 * The C++ and Java clients make the same decisions from the same inputs: every vector the C++
 * code wrote to tests/data/vectors is recomputed here (and murmur2 also checked against Kafka's
 * own Utils.murmur2 and built-in partitioner).
 */
class SharedVectorsTest {
  @Test
  void hashesAndPartitionsMatchCppAndKafka() throws Exception {
    int checked = 0;
    for (Object o : list(TestData.vectors("hashes.json").get("keys"))) {
      Map<?, ?> k = map(o);
      byte[] key = hex(k.get("hex"));
      String what = k.get("class") + " key of " + key.length + " bytes " + k.get("hex");
      assertEquals(num(k.get("murmur2")), Integer.toUnsignedLong(Hashes.murmur2(key)), what);
      assertEquals(Utils.murmur2(key), Hashes.murmur2(key), what);
      assertEquals(num(k.get("crc32")),
          Integer.toUnsignedLong(Hashes.crc32(key, 0, key.length)), what);
      assertEquals(num(k.get("fnv1a")),
          Integer.toUnsignedLong(Hashes.fnv1a(key, 0, key.length)), what);
      for (Object pp : list(k.get("murmur2_partitions"))) {
        int p = (int) num(list(pp).get(0));
        int expected = (int) num(list(pp).get(1));
        assertEquals(expected, Hashes.partitionFor(HashFamily.MURMUR2, key, p), what + " P=" + p);
        assertEquals(expected, BuiltInPartitioner.partitionForKey(key, p), what + " P=" + p);
        checked++;
      }
    }
    assertTrue(checked > 900, "vectors read: " + checked);
  }

  @Test
  void saltedKeysAndPlansMatchCpp() throws Exception {
    Map<?, ?> doc = TestData.vectors("salted_keys.json");
    for (Object o : list(doc.get("encodings"))) {
      Map<?, ?> e = map(o);
      byte[] salted = Salts.saltedKey(hex(e.get("key")), hex(e.get("separator")),
          (int) num(e.get("salt")));
      assertEquals(e.get("salted"), hex(salted));
      for (Object pp : list(e.get("murmur2_partitions"))) {
        assertEquals(num(list(pp).get(1)),
            Hashes.partitionFor(HashFamily.MURMUR2, salted, (int) num(list(pp).get(0))));
      }
    }
    for (Object o : list(doc.get("plans"))) {
      Map<?, ?> p = map(o);
      List<HotKeyList.Salt> plan = Salts.plan(HashFamily.MURMUR2, hex(p.get("key")),
          (int) num(p.get("count")), (int) num(p.get("partitions")), hex(p.get("separator")));
      List<?> want = list(p.get("salts"));
      assertEquals(want.size(), plan.size(), p.toString());
      for (int i = 0; i < plan.size(); i++) {
        List<?> w = list(want.get(i));
        assertEquals(num(w.get(0)), Integer.toUnsignedLong(plan.get(i).salt));
        assertEquals(num(w.get(1)), plan.get(i).partition);
        assertEquals(num(w.get(2)), plan.get(i).weight);
      }
    }
  }

  @Test
  void listsAcceptedAndRefusedLikeCpp() throws Exception {
    int refused = 0;
    for (Object o : list(TestData.vectors("lists.json").get("cases"))) {
      Map<?, ?> c = map(o);
      String name = (String) c.get("name");
      byte[] json = ((String) c.get("json")).getBytes(StandardCharsets.UTF_8);
      if (c.get("accepted") == Boolean.TRUE) {
        HotKeyList l;
        try {
          l = HotKeyList.parse(json);
        } catch (DecodeException e) {
          fail(name + ": refused by Java (" + e.getMessage() + "), accepted by C++");
          return;
        }
        Map<?, ?> p = map(c.get("parsed"));
        assertEquals(p.get("topic"), l.topic, name);
        assertEquals(((Json.Num) p.get("version")).integer.longValue(), l.version, name);
        assertEquals(num(p.get("partitions")), l.partitions, name);
        assertEquals(p.get("hash"), l.hash.wireName(), name);
        assertEquals(p.get("separator"), hex(l.separator), name);
        List<?> keys = list(p.get("keys"));
        assertEquals(keys.size(), l.keys.size(), name);
        for (int i = 0; i < keys.size(); i++) {
          Map<?, ?> k = map(keys.get(i));
          assertEquals(k.get("key"), hex(l.keys.get(i).key), name);
          assertEquals(k.get("source"), l.keys.get(i).source, name);
          List<?> salts = list(k.get("salts"));
          assertEquals(salts.size(), l.keys.get(i).salts.size(), name);
          for (int s = 0; s < salts.size(); s++) {
            HotKeyList.Salt got = l.keys.get(i).salts.get(s);
            assertEquals(num(list(salts.get(s)).get(0)), Integer.toUnsignedLong(got.salt), name);
            assertEquals(num(list(salts.get(s)).get(1)), got.partition, name);
            assertEquals(num(list(salts.get(s)).get(2)), Integer.toUnsignedLong(got.weight), name);
          }
        }
        List<?> denied = list(p.get("denied"));
        assertEquals(denied.size(), l.denied.size(), name);
        for (int i = 0; i < denied.size(); i++) {
          assertEquals(denied.get(i), hex(l.denied.get(i)), name);
        }
      } else {
        DecodeException e = assertThrows(DecodeException.class, () -> HotKeyList.parse(json),
            name + ": accepted by Java, refused by C++ (" + c.get("reason") + ")");
        Object field = c.get("field");
        if (field instanceof String) {
          // Same field, same words: the C++ reason is the Java reason.
          assertEquals(c.get("reason"), e.getMessage(), name);
        } else {
          assertTrue(e.getMessage().startsWith("hot-key list: "), name + ": " + e.getMessage());
        }
        refused++;
      }
    }
    assertTrue(refused >= 30, "refused cases: " + refused);
  }

  @Test
  void localTablesMatchCpp() throws Exception {
    int cases = 0;
    int added = 0;
    for (Object o : list(TestData.vectors("local_tables.json").get("cases"))) {
      Map<?, ?> c = map(o);
      String name = (String) c.get("name");
      Map<?, ?> in = map(c.get("input"));
      LocalPlan.Input input = new LocalPlan.Input();
      input.partitions = (int) num(in.get("partitions"));
      input.family = HashFamily.parse((String) in.get("hash"));
      input.separator = hex(in.get("separator"));
      List<?> pc = list(in.get("partition_counts"));
      input.partitionCounts = new long[pc.size()];
      for (int i = 0; i < pc.size(); i++) {
        input.partitionCounts[i] = num(pc.get(i));
      }
      input.total = num(in.get("total"));
      input.sketchTotal = num(in.get("sketch_total"));
      for (Object it : list(in.get("items"))) {
        List<?> item = list(it);
        input.items.add(new Report.Item(hex(item.get(0)), num(item.get(1)), num(item.get(2))));
      }
      input.surgeFactor = dbl(in.get("surge_factor"));
      input.listed = hexes(in.get("listed"));
      input.denied = hexes(in.get("denied"));
      input.neverSalt = hexes(in.get("never_salt"));
      input.current = localKeys(in.get("current"));
      LocalPlan plan = LocalPlan.plan(input);
      Map<?, ?> out = map(c.get("output"));
      assertEquals(describe(localKeys(out.get("keys"))), describe(plan.keys), name);
      assertEquals(describeKeys(hexes(out.get("added"))), describeKeys(plan.added), name);
      assertEquals(describeKeys(hexes(out.get("dropped"))), describeKeys(plan.dropped), name);
      added += plan.added.size();
      cases++;
    }
    assertTrue(cases >= 12 && added >= 5, "cases " + cases + ", keys added " + added);
  }

  private static List<byte[]> hexes(Object o) {
    List<byte[]> out = new ArrayList<>();
    for (Object h : list(o)) {
      out.add(hex(h));
    }
    return out;
  }

  /** [{key, salts: [[salt, partition, weight], ...]}, ...] as hot keys. */
  private static List<HotKeyList.HotKey> localKeys(Object o) {
    List<HotKeyList.HotKey> out = new ArrayList<>();
    for (Object k : list(o)) {
      List<HotKeyList.Salt> salts = new ArrayList<>();
      for (Object s : list(map(k).get("salts"))) {
        List<?> t = list(s);
        salts.add(new HotKeyList.Salt((int) num(t.get(0)), (int) num(t.get(1)),
            (int) num(t.get(2))));
      }
      out.add(new HotKeyList.HotKey(hex(map(k).get("key")), salts, "local"));
    }
    return out;
  }

  private static String describe(List<HotKeyList.HotKey> keys) {
    StringBuilder sb = new StringBuilder();
    for (HotKeyList.HotKey k : keys) {
      sb.append(TestData.hex(k.key)).append(':');
      for (HotKeyList.Salt s : k.salts) {
        sb.append(' ').append(Integer.toUnsignedString(s.salt)).append('/').append(s.partition)
            .append('/').append(Integer.toUnsignedString(s.weight));
      }
      sb.append('\n');
    }
    return sb.toString();
  }

  private static String describeKeys(List<byte[]> keys) {
    List<String> out = new ArrayList<>();
    for (byte[] k : keys) {
      out.add(TestData.hex(k));
    }
    return out.toString();
  }

  @Test
  void smoothWrrSequencesMatchCpp() throws Exception {
    for (Object o : list(TestData.vectors("wrr.json").get("cases"))) {
      Map<?, ?> c = map(o);
      List<?> w = list(c.get("weights"));
      int[] weights = new int[w.size()];
      for (int i = 0; i < weights.length; i++) {
        weights[i] = (int) num(w.get(i));
      }
      short[] seq = Wrr.sequence(weights, (int) num(c.get("max_len")));
      List<?> want = list(c.get("sequence"));
      assertEquals(want.size(), seq.length, w.toString());
      for (int i = 0; i < seq.length; i++) {
        assertEquals(num(want.get(i)), seq[i], w + " step " + i);
      }
      // A routing table's cursor started at `start` picks the same salts as the C++ one.
      List<?> picks = list(c.get("picks_from_start"));
      int start = (int) num(c.get("start"));
      for (int i = 0; i < picks.size(); i++) {
        assertEquals(num(picks.get(i)), seq[(start + i) % seq.length], w + " pick " + i);
      }
    }
  }

  @Test
  void reportEncodingsMatchCpp() throws Exception {
    Map<?, ?> doc = TestData.vectors("reports.json");
    List<byte[]> encoded = new ArrayList<>();
    for (Object o : list(doc.get("reports"))) {
      Map<?, ?> v = map(o);
      Report r = new Report();
      r.producer = (String) v.get("producer");
      r.topic = (String) v.get("topic");
      r.partitions = (int) num(v.get("partitions"));
      r.hash = HashFamily.parse((String) v.get("hash"));
      r.separator = hex(v.get("separator"));
      r.windowMs = num(v.get("window_ms"));
      r.sampleRate = dbl(v.get("sample_rate"));
      r.total = num(v.get("total"));
      List<?> pc = list(v.get("partition_counts"));
      r.partitionCounts = new long[pc.size()];
      for (int i = 0; i < pc.size(); i++) {
        r.partitionCounts[i] = num(pc.get(i));
      }
      r.seq = num(v.get("seq"));
      r.sentAtMs = num(v.get("sent_at_ms"));
      r.listVersion = num(v.get("list_version"));
      r.sketchCapacity = (int) num(v.get("sketch_capacity"));
      r.sketchMin = num(v.get("sketch_min"));
      r.sketchTotal = num(v.get("sketch_total"));
      for (Object it : list(v.get("items"))) {
        List<?> item = list(it);
        r.items.add(new Report.Item(hex(item.get(0)), num(item.get(1)), num(item.get(2))));
      }
      byte[] bin = r.encodeBinary();
      assertEquals(v.get("binary"), hex(bin));
      encoded.add(bin);
      // The JSON form: the same document (numbers may be spelled differently).
      assertEquals(canonical(Json.parse((String) v.get("json"))), canonical(Json.parse(r.toJson())));
    }
    assertArrayEquals(hex(doc.get("batch_binary")), Report.batchBinary(encoded));
  }

  private static Object canonical(Object v) {
    if (v instanceof Json.Num) {
      return ((Json.Num) v).value;
    }
    if (v instanceof Map) {
      Map<Object, Object> out = new java.util.TreeMap<>();
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        out.put(e.getKey(), canonical(e.getValue()));
      }
      return out;
    }
    if (v instanceof List) {
      List<Object> out = new ArrayList<>();
      for (Object o : (List<?>) v) {
        out.add(canonical(o));
      }
      return out;
    }
    return v;
  }
}
