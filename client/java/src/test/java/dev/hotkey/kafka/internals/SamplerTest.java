package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyConfig;
import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.MergeContract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The sketch's guarantees and the sampler's totals, rates and surges. */
class SamplerTest {
  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void spaceSavingKeepsItsErrorBoundsAlsoAfterAMerge() {
    Random rnd = new Random(7);
    int k = 32;
    List<SpaceSaving> parts = new ArrayList<>();
    Map<String, Long> truth = new HashMap<>();
    long n = 0;
    for (int part = 0; part < 4; part++) {
      SpaceSaving s = new SpaceSaving(k);
      for (int i = 0; i < 20000; i++) {
        // Zipf-like: a few heavy keys and a long tail.
        String key = rnd.nextInt(4) == 0 ? "heavy-" + rnd.nextInt(3) : "tail-" + rnd.nextInt(5000);
        s.update(b(key), 1);
        truth.merge(key, 1L, Long::sum);
        n++;
      }
      assertTrue(s.minCount() <= s.total() / k);
      parts.add(s);
    }
    SpaceSaving m = SpaceSaving.mergeAll(parts, k);
    assertEquals(n, m.total());
    Map<String, SpaceSaving.Item> items = new HashMap<>();
    for (SpaceSaving.Item it : m.items()) {
      items.put(new String(it.key, StandardCharsets.UTF_8), it);
    }
    for (Map.Entry<String, Long> e : truth.entrySet()) {
      SpaceSaving.Item it = items.get(e.getKey());
      if (it != null) {
        assertTrue(it.count - it.error <= e.getValue() && e.getValue() <= it.count, e.getKey());
      } else {
        assertTrue(e.getValue() <= n / k, e.getKey() + " unmonitored with " + e.getValue());
      }
    }
    for (int h = 0; h < 3; h++) {
      assertTrue(items.containsKey("heavy-" + h));
    }
  }

  @Test
  void totalsAndPartitionCountsAreExactAcrossThreads() throws Exception {
    Sampler s = new Sampler(64, true, 1.0, 0);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      final int id = t;
      threads.add(new Thread(() -> {
        for (int i = 0; i < 50000; i++) {
          s.record(b(i % 10 == 0 ? "hot" : "k" + id + "-" + i), i % 12, i % 10 == 0);
        }
      }));
    }
    threads.forEach(Thread::start);
    long drained = 0;
    long[] perPartition = new long[12];
    while (threads.stream().anyMatch(Thread::isAlive)) {
      Sampler.Window w = s.drain(12, 500, 500);
      drained += w.total;
      long sum = 0;
      for (int p = 0; p < 12; p++) {
        perPartition[p] += w.partitionCounts[p];
        sum += w.partitionCounts[p];
      }
      assertTrue(sum <= w.total && w.sketchTotal <= w.total,
          "a window's counts fit its total: " + sum + " " + w.sketchTotal + " " + w.total);
    }
    for (Thread t : threads) {
      t.join();
    }
    Sampler.Window last = s.drain(12, 500, 500);
    drained += last.total;
    for (int p = 0; p < 12; p++) {
      perPartition[p] += last.partitionCounts[p];
    }
    assertEquals(200000, drained);
    for (int p = 0; p < 12; p++) {
      assertEquals(4 * (50000 / 12 + (p < 50000 % 12 ? 1 : 0)), perPartition[p], "partition " + p);
    }
    long[] c = s.counters();
    assertEquals(20000, c[0]);
    assertEquals(180000, c[1]);
  }

  @Test
  void theAdaptiveRateFollowsTheRecordRateAndIsReported() {
    Sampler s = new Sampler(256, true, 1.0, 0);
    for (int i = 0; i < 200000; i++) {
      s.record(b("k" + (i % 1000)), 0, false);
    }
    Sampler.Window first = s.drain(1, 500, 500);
    assertEquals(1.0, first.sampleRate);
    assertEquals(200000, first.sketchTotal);
    for (int i = 0; i < 200000; i++) {
      s.record(b(i % 4 == 0 ? "hot" : "k" + (i % 1000)), 0, false);
    }
    Sampler.Window second = s.drain(1, 500, 500);
    // capacity^2/4 = 16384 samples of 200,000 records.
    assertTrue(second.sampleRate > 0.05 && second.sampleRate < 0.12, "rate " + second.sampleRate);
    assertEquals((double) second.sketchTotal / second.total, second.sampleRate, 1e-12);
    SpaceSaving.Item hot = second.sketch.items().get(0);
    assertEquals("hot", new String(hot.key, StandardCharsets.UTF_8));
    double scaled = hot.count / second.sampleRate;
    assertTrue(Math.abs(scaled - 50000) < 5000, "scaled count of the hot key " + scaled);
  }

  @Test
  void aSurgingColdKeyLeavesItsFingerprintButASaltedOneDoesNot() {
    Sampler s = new Sampler(64, true, 1.0, 1.0);
    s.setPartitions(24);
    for (int i = 0; i < 2000; i++) {
      s.record(b("salted"), 0, true);
    }
    assertEquals(0, s.takeSurge());
    for (int i = 0; i < 2000; i++) {
      s.record(b(i % 2 == 0 ? "surge" : "k" + i), 0, false);
    }
    long fp = s.takeSurge();
    assertEquals(Sampler.fingerprint(b("surge")), fp);
    s.setMuted(0, fp);
    s.drain(24, 100, 100);
    for (int i = 0; i < 2000; i++) {
      s.record(b(i % 2 == 0 ? "surge" : "k" + i), 0, false);
    }
    assertEquals(0, s.takeSurge(), "a muted key is no surge");
    assertNotEquals(0, Sampler.fingerprint(b("")));
  }
}
