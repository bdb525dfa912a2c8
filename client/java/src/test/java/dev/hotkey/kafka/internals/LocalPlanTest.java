package dev.hotkey.kafka.internals;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The local-table decision (LocalPlan; the C++ client's LocalPlan.* tests case for case): which
 * keys of a stale topic's window get a table, and which tables. The shared vectors are in
 * SharedVectorsTest.
 */
class LocalPlanTest {
  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * A window of {@code cold} records spread evenly over the partitions plus the keys (key,
   * records, ...), each on its home partition, sampled completely.
   */
  private static LocalPlan.Input window(int partitions, HashFamily family, long cold,
      Object... keys) {
    LocalPlan.Input in = new LocalPlan.Input();
    in.partitions = partitions;
    in.family = family;
    in.partitionCounts = new long[partitions];
    java.util.Arrays.fill(in.partitionCounts, cold / partitions);
    in.partitionCounts[0] += cold % partitions;
    in.total = cold;
    for (int i = 0; i < keys.length; i += 2) {
      byte[] key = b((String) keys[i]);
      long n = ((Number) keys[i + 1]).longValue();
      in.partitionCounts[Hashes.partitionFor(family, key, partitions)] += n;
      in.total += n;
      in.items.add(new Report.Item(key, n, 0));
    }
    in.sketchTotal = in.total;
    return in;
  }

  private static double maxOverAvg(double[] load) {
    double sum = 0;
    double max = 0;
    for (double v : load) {
      sum += v;
      max = Math.max(max, v);
    }
    return max / (sum / load.length);
  }

  private static List<String> texts(List<byte[]> keys) {
    List<String> out = new ArrayList<>();
    for (byte[] k : keys) {
      out.add(new String(k, StandardCharsets.UTF_8));
    }
    return out;
  }

  @Test
  void aKeyAtTheThresholdGetsAVerifiedTableThatLevelsTheWindow() {
    // One key at half the records of 12 partitions: unsalted, its home carries 7x the average.
    LocalPlan plan = LocalPlan.plan(window(12, HashFamily.MURMUR2, 6000, "seller-42", 6000));
    assertEquals(1, plan.keys.size());
    assertEquals(List.of("seller-42"), texts(plan.added));
    HotKeyList.HotKey k = plan.keys.get(0);
    assertTrue(SaltPlanner.verify(HashFamily.MURMUR2, k.key, k.salts, 12,
        Salts.DEFAULT_SEPARATOR), "distinct partitions, every salt recomputed");
    assertTrue(k.salts.size() >= 6, "salts: " + k.salts.size());
    long weights = 0;
    double[] load = new double[12];
    java.util.Arrays.fill(load, 500.0); // the cold records
    for (HotKeyList.Salt s : k.salts) {
      weights += s.weight;
      load[s.partition] += 6000.0 * s.weight / 10000;
    }
    assertEquals(10000, weights);
    assertTrue(maxOverAvg(load) < 1.05, "max/avg " + maxOverAvg(load));
  }

  @Test
  void listedDeniedAndNeverSaltKeysAreLeftAlone() {
    for (int rule = 0; rule < 3; rule++) {
      LocalPlan.Input in = window(12, HashFamily.MURMUR2, 6000, "seller-42", 6000);
      if (rule == 0) {
        in.listed = List.of(b("seller-42"));
      }
      if (rule == 1) {
        in.denied = List.of(b("seller-42"));
      }
      if (rule == 2) {
        in.neverSalt = List.of(b("account:"), b("seller-"));
      }
      LocalPlan plan = LocalPlan.plan(in);
      assertTrue(plan.keys.isEmpty(), "rule " + rule);
      assertFalse(plan.changed(), "rule " + rule);
    }
    // A prefix longer than the key, or matching elsewhere in it, covers nothing.
    LocalPlan.Input in = window(12, HashFamily.MURMUR2, 6000, "seller-42", 6000);
    in.neverSalt = List.of(b("seller-42-x"), b("42"));
    assertEquals(1, LocalPlan.plan(in).keys.size());
  }

  @Test
  void theThresholdIsTheSurgeReportsOne() {
    // hotkey.surge.factor / partitions of the window: 1/12 = 8.3% at the default factor.
    assertTrue(LocalPlan.plan(window(12, HashFamily.MURMUR2, 9200, "k", 800)).keys.isEmpty());
    LocalPlan.Input at = window(12, HashFamily.MURMUR2, 9150, "k", 850); // 8.5%
    assertEquals(1, LocalPlan.plan(at).keys.size());
    at.surgeFactor = 2.0; // 16.7% needed
    assertTrue(LocalPlan.plan(at).keys.isEmpty());
    // A guaranteed count: the Space-Saving error bound comes off.
    LocalPlan.Input err = window(12, HashFamily.MURMUR2, 9150, "k", 850);
    err.items.set(0, new Report.Item(b("k"), 850, 100));
    assertTrue(LocalPlan.plan(err).keys.isEmpty());
    // At least 32 records.
    assertTrue(LocalPlan.plan(window(12, HashFamily.MURMUR2, 10, "k", 31)).keys.isEmpty());
    assertEquals(1, LocalPlan.plan(window(12, HashFamily.MURMUR2, 10, "k", 32)).keys.size());
    // Sampled below rate 1: at least 16 samples of the key, its records scaled.
    assertTrue(LocalPlan.atHotThreshold(16, 100, 800, 12, 1.0));
    assertFalse(LocalPlan.atHotThreshold(15, 100, 800, 12, 1.0));
    assertFalse(LocalPlan.atHotThreshold(16, 0, 800, 12, 1.0));
  }

  @Test
  void currentKeysKeepTheirTablesUntilTheyCoolBelowHalfTheThreshold() {
    LocalPlan first = LocalPlan.plan(window(12, HashFamily.MURMUR2, 6000, "a", 6000));
    assertEquals(1, first.keys.size());
    // Still hot (now spread by its table, the same share): kept as it was, nothing changes.
    LocalPlan.Input in = window(12, HashFamily.MURMUR2, 6000, "a", 6000);
    in.current = first.keys;
    LocalPlan same = LocalPlan.plan(in);
    assertFalse(same.changed());
    assertEquals(1, same.keys.size());
    assertTrue(same.keys.get(0) == first.keys.get(0), "the same table");
    // At 5% (below 1/12 but above half of it): kept.
    in = window(12, HashFamily.MURMUR2, 9500, "a", 500);
    in.current = first.keys;
    assertFalse(LocalPlan.plan(in).changed());
    // At 3%: dropped; and a key that left the sketch altogether too.
    in = window(12, HashFamily.MURMUR2, 9700, "a", 300);
    in.current = first.keys;
    LocalPlan cooled = LocalPlan.plan(in);
    assertTrue(cooled.keys.isEmpty());
    assertEquals(List.of("a"), texts(cooled.dropped));
    in = window(12, HashFamily.MURMUR2, 9700);
    in.current = first.keys;
    assertEquals(List.of("a"), texts(LocalPlan.plan(in).dropped));
  }

  @Test
  void newKeysAreLeveledAroundTheKeysAlreadySalted() {
    // The window carries "a" spread by its table; "b" surges now: its table fills the
    // partitions "a" left lightest, and "a"'s table is not touched.
    LocalPlan first = LocalPlan.plan(window(8, HashFamily.CRC32, 4000, "a", 4000));
    assertEquals(1, first.keys.size());
    LocalPlan.Input in = new LocalPlan.Input();
    in.partitions = 8;
    in.family = HashFamily.CRC32;
    in.partitionCounts = new long[8];
    java.util.Arrays.fill(in.partitionCounts, 250); // cold 2000
    for (HotKeyList.Salt s : first.keys.get(0).salts) {
      in.partitionCounts[s.partition] += 2000L * s.weight / 10000;
    }
    int homeB = Hashes.partitionFor(HashFamily.CRC32, b("b"), 8);
    in.partitionCounts[homeB] += 2000;
    in.total = 6000;
    in.sketchTotal = 6000;
    in.items = List.of(new Report.Item(b("a"), 2000, 0), new Report.Item(b("b"), 2000, 0));
    in.current = first.keys;
    LocalPlan plan = LocalPlan.plan(in);
    assertEquals(2, plan.keys.size());
    assertTrue(plan.keys.get(0) == first.keys.get(0));
    assertEquals(List.of("b"), texts(plan.added));
    double[] load = new double[8];
    for (int p = 0; p < 8; p++) {
      load[p] = in.partitionCounts[p];
    }
    load[homeB] -= 2000;
    for (HotKeyList.Salt s : plan.keys.get(1).salts) {
      load[s.partition] += 2000.0 * s.weight / 10000;
    }
    assertTrue(maxOverAvg(load) < 1.05, "max/avg " + maxOverAvg(load));
  }

  @Test
  void atMostSixtyFourKeysLargestFirst() {
    Object[] keys = new Object[200];
    for (int i = 0; i < 100; i++) {
      keys[2 * i] = "k" + i;
      keys[2 * i + 1] = 1000 + i; // each far above 1/256 of the window
    }
    LocalPlan plan = LocalPlan.plan(window(256, HashFamily.MURMUR2, 0, keys));
    assertEquals(LocalPlan.MAX_LOCAL_KEYS, plan.keys.size());
    assertArrayEquals(b("k99"), plan.keys.get(0).key);
    Set<String> chosen = new HashSet<>();
    for (HotKeyList.HotKey k : plan.keys) {
      chosen.add(new String(k.key, StandardCharsets.UTF_8));
    }
    assertFalse(chosen.contains("k0"));
  }

  @Test
  void badInputIsRefused() {
    LocalPlan.Input in = window(12, HashFamily.MURMUR2, 6000, "a", 6000);
    in.partitionCounts = java.util.Arrays.copyOf(in.partitionCounts, 11);
    assertThrows(IllegalArgumentException.class, () -> LocalPlan.plan(in));
    LocalPlan.Input digit = window(12, HashFamily.MURMUR2, 6000, "a", 6000);
    digit.separator = b("7"); // a digit: no valid salted key form
    assertThrows(IllegalArgumentException.class, () -> LocalPlan.plan(digit));
    LocalPlan.Input none = window(12, HashFamily.MURMUR2, 6000, "a", 6000);
    none.partitions = 0;
    assertThrows(IllegalArgumentException.class, () -> LocalPlan.plan(none));
  }
}
