package dev.hotkey.kafka;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * One topic's sampler (client/src/sampler.cc): every keyed record counts in the totals and its
 * partition; sampled ones feed a Space-Saving sketch. 16 shards, a thread always on the same
 * one, so a shard's monitor is uncontended except while the reporter drains it. The adaptive
 * rate aims at capacity^2/4 samples a window with geometric gaps (no bias on cyclic keys).
 */
final class Sampler {
  static final int SHARDS = 16;
  static final long ADAPTIVE_MIN_SAMPLES = 4096;
  static final double ADAPTIVE_MIN_RATE = 1e-5;
  static final long SURGE_MIN_SAMPLED = 16;
  static final double SURGE_MIN_RECORDS = 32;
  static final int MUTE_SLOTS = 8;
  static final double MIN_SAMPLE_RATE = 1e-6;

  private static final AtomicLong NEXT_SEED = new AtomicLong(0x9e3779b97f4a7c15L);

  private static final class Shard {
    SpaceSaving sketch;
    long total;
    long sketchTotal;
    long untilSample;
    double rate = 1.0;
    double invLogSkip;
    long surgeMinSampled;
    long rng;
    long[] partitionCounts = new long[0];
    long salted;
    long cold;
    long nullKey;

    long gap() {
      if (rate >= 1.0) {
        return 0;
      }
      rng ^= rng << 13;
      rng ^= rng >>> 7;
      rng ^= rng << 17;
      double u = ((rng >>> 11) + 1) * 0x1.0p-53;
      double g = Math.floor(Math.log(u) * invLogSkip);
      return g < 1e15 ? (long) g : 1_000_000_000_000_000L;
    }
  }

  /** A drained window. */
  static final class Window {
    SpaceSaving sketch;
    long total;
    long sketchTotal;
    long[] partitionCounts;
    double sampleRate;
  }

  private final int capacity;
  private final boolean adaptive;
  private final double fixedRate;
  private final long sampleEvery;
  private final double surgeFactor;
  private final long surgeMinSampledFixed;
  private final long targetSamples;
  private final Shard[] shards = new Shard[SHARDS];
  private volatile double rate = 1.0;
  private final AtomicInteger partitions = new AtomicInteger();
  private final AtomicLong surge = new AtomicLong();
  private final AtomicLongArray muted = new AtomicLongArray(MUTE_SLOTS);

  Sampler(int capacity, boolean adaptive, double sampleRate, double surgeFactor) {
    this.capacity = capacity;
    this.adaptive = adaptive;
    this.fixedRate = adaptive ? 1.0 : sampleRate;
    double every = Math.round(1.0 / fixedRate);
    this.sampleEvery = every < 1 ? 1 : every > 1e9 ? 1_000_000_000L : (long) every;
    this.surgeFactor = surgeFactor;
    this.surgeMinSampledFixed =
        Math.max(1, (long) Math.ceil(SURGE_MIN_RECORDS / (double) sampleEvery));
    this.targetSamples = Math.max(ADAPTIVE_MIN_SAMPLES, (long) capacity * capacity / 4);
    for (int i = 0; i < SHARDS; i++) {
      Shard s = new Shard();
      s.rng = RoutingTable.splitmix64(NEXT_SEED.getAndIncrement()) | 1;
      setShardRate(s, 1.0);
      shards[i] = s;
    }
  }

  private void setShardRate(Shard s, double r) {
    s.rate = r;
    s.invLogSkip = r < 1.0 ? 1.0 / Math.log1p(-r) : 0.0;
    s.surgeMinSampled = r < 1.0
        ? Math.max(SURGE_MIN_SAMPLED, (long) Math.ceil(SURGE_MIN_RECORDS * r))
        : surgeMinSampledFixed;
    s.untilSample = s.gap();
  }

  private Shard shard() {
    return shards[(int) (Thread.currentThread().getId() & (SHARDS - 1))];
  }

  double sampleRate() {
    return adaptive ? rate : fixedRate;
  }

  /** A keyed record sent to {@code partition} (-1: not known), salted or not. */
  void record(byte[] key, int partition, boolean salted) {
    Shard s = shard();
    synchronized (s) {
      s.total++;
      if (salted) {
        s.salted++;
      } else {
        s.cold++;
      }
      if (partition >= 0) {
        if (partition >= s.partitionCounts.length) {
          s.partitionCounts = Arrays.copyOf(s.partitionCounts, partition + 1);
        }
        s.partitionCounts[partition]++;
      }
      if (s.untilSample != 0) {
        s.untilSample--;
        return;
      }
      s.untilSample = adaptive ? s.gap() : sampleEvery - 1;
      if (s.sketch == null) {
        s.sketch = new SpaceSaving(capacity);
      }
      s.sketchTotal++;
      SpaceSaving.Item it = s.sketch.update(key, 1);
      if (surgeFactor > 0 && !salted) {
        checkSurge(key, it.count - it.error, s.sketchTotal, s.surgeMinSampled);
      }
    }
  }

  void recordNull() {
    Shard s = shard();
    synchronized (s) {
      s.nullKey++;
    }
  }

  private void checkSurge(byte[] key, long guaranteed, long sketchTotal, long minSampled) {
    if (guaranteed < minSampled) {
      return;
    }
    int p = partitions.get();
    if (p <= 0 || (double) guaranteed * p < surgeFactor * (double) sketchTotal) {
      return;
    }
    long fp = fingerprint(key);
    for (int i = 0; i < MUTE_SLOTS; i++) {
      if (muted.get(i) == fp) {
        return;
      }
    }
    surge.compareAndSet(0, fp);
  }

  static long fingerprint(byte[] key) {
    long h = RoutingTable.splitmix64(((long) Hashes.murmur2(key) << 32) ^ key.length);
    return h != 0 ? h : 1;
  }

  void setPartitions(int p) {
    partitions.set(p);
  }

  long takeSurge() {
    return surge.get() == 0 ? 0 : surge.getAndSet(0);
  }

  void setMuted(int slot, long fp) {
    if (slot >= 0 && slot < MUTE_SLOTS) {
      muted.set(slot, fp);
    }
  }

  long[] counters() {
    long[] c = new long[3];
    for (Shard s : shards) {
      synchronized (s) {
        c[0] += s.salted;
        c[1] += s.cold;
        c[2] += s.nullKey;
      }
    }
    return c;
  }

  /** Drains the window: totals, per-partition counts and the merged sketch (drain()). */
  Window drain(int partitionCount, long windowMs, long nextWindowMs) {
    Window w = new Window();
    w.partitionCounts = new long[Math.max(partitionCount, 0)];
    double windowRate = adaptive ? rate : fixedRate;
    double nextRate = windowRate;
    if (adaptive) {
      long seen = 0;
      for (Shard s : shards) {
        synchronized (s) {
          seen += s.total;
        }
      }
      double expected = seen;
      if (windowMs > nextWindowMs && nextWindowMs > 0) {
        expected *= (double) nextWindowMs / windowMs;
      }
      nextRate = expected > targetSamples
          ? Math.max(ADAPTIVE_MIN_RATE, targetSamples / expected) : 1.0;
      rate = nextRate;
    }
    List<SpaceSaving> parts = new ArrayList<>();
    for (Shard s : shards) {
      synchronized (s) {
        if (adaptive && s.rate != nextRate) {
          setShardRate(s, nextRate);
        }
        w.total += s.total;
        w.sketchTotal += s.sketchTotal;
        for (int p = 0; p < s.partitionCounts.length && p < w.partitionCounts.length; p++) {
          w.partitionCounts[p] += s.partitionCounts[p];
        }
        Arrays.fill(s.partitionCounts, 0);
        s.total = 0;
        s.sketchTotal = 0;
        if (s.sketch != null && s.sketch.size() > 0) {
          parts.add(s.sketch);
          s.sketch = new SpaceSaving(capacity);
        }
      }
    }
    w.sketch = parts.isEmpty() ? new SpaceSaving(capacity) : SpaceSaving.mergeAll(parts, capacity);
    w.sampleRate = fixedRate;
    if (adaptive) {
      w.sampleRate = w.sketchTotal > 0 && w.total > 0
          ? (double) w.sketchTotal / (double) w.total : windowRate;
      w.sampleRate = Math.min(1.0, Math.max(MIN_SAMPLE_RATE, w.sampleRate));
    }
    return w;
  }
}
