package dev.hotkey.kafka.internals;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CopyOnWriteArrayList;
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
  static final long ADAPTIVE_MIN_SAMPLES = 4096;
  static final double ADAPTIVE_MIN_RATE = 1e-5;
  static final long SURGE_MIN_SAMPLED = 16;
  static final double SURGE_MIN_RECORDS = 32;
  static final int MUTE_SLOTS = 8;
  static final double MIN_SAMPLE_RATE = 1e-6;

  private static final AtomicLong NEXT_SEED = new AtomicLong(0x9e3779b97f4a7c15L);

  private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);

  /**
   * One sending thread's part. The counters only grow and only their thread writes them
   * (release stores, plain moves on x86): the send path takes no lock for a record it does not
   * sample. The reporter reads them (acquire) and reports the growth since its last look.
   * Sampled records and the reporter's drain meet under the shard's monitor.
   */
  private static final class Shard {
    final Thread owner = Thread.currentThread();
    // Owner thread only. untilSample: records to skip before the next sample; -1 while a
    // repeated partition() call is expected (kafka-clients 3.x onNewBatch, markRepeat), the
    // count to restore in savedUntil and the partition the first call gave in repeatPartition.
    long untilSample;
    long savedUntil;
    int repeatPartition;
    long rng;
    // Written by the owner (release), read by the reporter.
    // Records without a known partition, salted, [2] unused, without a key. The window's total is
    // the growth of the partition counts plus the first: derived from the same counters, a
    // window's partition counts never exceed its total.
    final long[] counts = new long[4];
    volatile long[] partitionCounts = new long[0];
    // Guarded by the monitor: the sketch and the rate it is sampled at.
    SpaceSaving sketch;
    long sketchTotal;
    double rate = 1.0;
    double invLogSkip;
    long surgeMinSampled;
    boolean redraw;
    // The reporter's last look.
    long seenTotal;
    long[] seenPartitions = new long[0];

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

    void bump(int i) {
      LONGS.setRelease(counts, i, counts[i] + 1);
    }

    long read(int i) {
      return (long) LONGS.getAcquire(counts, i);
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
  private final List<Shard> shards = new CopyOnWriteArrayList<>();
  private final ThreadLocal<Shard> local = ThreadLocal.withInitial(this::newShard);
  // The shard of the first thread that recorded here: found with one compare of the current
  // thread instead of a ThreadLocal lookup, for the usual single sending thread per producer.
  // Written once (a race leaves one of the first threads' shards, each valid); a shard whose
  // owner is this thread was made by this thread, so its fields are this thread's own.
  private Shard first;
  private volatile double rate = 1.0;
  private final AtomicInteger partitions = new AtomicInteger();
  private final AtomicLong surge = new AtomicLong();
  private final AtomicLongArray muted = new AtomicLongArray(MUTE_SLOTS);
  // Set before the sampler is published (HotkeyClient.topic).
  private Runnable surgeListener;

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
  }

  private Shard newShard() {
    Shard s = new Shard();
    s.rng = RoutingTable.splitmix64(NEXT_SEED.getAndIncrement()) | 1;
    synchronized (s) {
      setShardRate(s, adaptive ? rate : 1.0);
      s.untilSample = s.gap();
    }
    shards.add(s);
    return s;
  }

  private void setShardRate(Shard s, double r) {
    s.rate = r;
    s.invLogSkip = r < 1.0 ? 1.0 / Math.log1p(-r) : 0.0;
    s.surgeMinSampled = r < 1.0
        ? Math.max(SURGE_MIN_SAMPLED, (long) Math.ceil(SURGE_MIN_RECORDS * r))
        : surgeMinSampledFixed;
    s.redraw = true;
  }

  double sampleRate() {
    return adaptive ? rate : fixedRate;
  }

  /** A keyed record sent to {@code partition} (-1: not known), salted or not. */
  void record(byte[] key, int partition, boolean salted) {
    Shard s = shard();
    if (s.untilSample > 0) {
      s.untilSample--;
      count(s, partition, salted);
      return;
    }
    sampleOutOfLine(s, key, partition, salted);
  }

  /**
   * kafka-clients 3.x calls the partitioner a second time for a record that opens a new batch,
   * after onNewBatch(prevPartition), with the same record. On the sending thread: the next
   * record of this thread on this topic that lands on {@code prevPartition} is that repeat and
   * is not counted again. (Also called, 3.x again, for a record with an explicit partition,
   * which the partitioner never saw: the mark then waits for this thread's next record, which
   * is counted unless it happens to land on prevPartition.)
   */
  void markRepeat(int prevPartition) {
    Shard s = shard();
    if (s.untilSample >= 0) {
      s.savedUntil = s.untilSample;
      s.untilSample = -1;
    }
    s.repeatPartition = prevPartition;
  }

  /**
   * The partition of this thread's pending repeat (see markRepeat), or -1; the mark is
   * consumed. For the paths that decide out of line (listed keys, records without a key).
   */
  int takeRepeat() {
    Shard s = shard();
    if (s.untilSample >= 0) {
      return -1;
    }
    s.untilSample = s.savedUntil;
    return s.repeatPartition;
  }

  // The sampled path stays out of line. A producer's first reporting window samples every
  // record (the adaptive rate starts at 1), so when C2 compiles partition() the profile says
  // sample() runs on every call, and it inlines it whole (the monitor, the sketch update, the
  // surge check); partition() then stays that large after the rate falls to 1 in 30 or less.
  // A call through a MethodHandle held in an instance field is one C2 cannot inline (the handle
  // is not a constant), so the count path compiles small whatever the early profile said.
  // CpuCost, 10 JVMs each (docs/BENCHMARKS.md "Java client"): cold-key partition() 1.45x the
  // built-in partitioner with sample() inlined, 1.31x out of line.
  private static final MethodHandle SAMPLE;

  static {
    try {
      SAMPLE = MethodHandles.lookup().findVirtual(Sampler.class, "sample",
          MethodType.methodType(void.class, Shard.class, byte[].class, int.class, boolean.class));
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final MethodHandle sampleHandle = SAMPLE;

  private void sampleOutOfLine(Shard s, byte[] key, int partition, boolean salted) {
    try {
      sampleHandle.invokeExact(this, s, key, partition, salted);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) { // sample() throws nothing checked
      throw new IllegalStateException(t);
    }
  }

  private static void count(Shard s, int partition, boolean salted) {
    // A cold record is counted once, in its partition's count (cold = keyed - salted). The
    // salted count is stored last, so counters() reading it first never sees it ahead.
    if (partition < 0) {
      s.bump(0);
    } else {
      long[] pc = s.partitionCounts;
      if (partition >= pc.length) {
        pc = Arrays.copyOf(pc, partition + 1);
        s.partitionCounts = pc;
      }
      LONGS.setRelease(pc, partition, pc[partition] + 1);
    }
    if (salted) {
      s.bump(1);
    }
  }

  // A sampled record is counted under the monitor, where the reporter reads a shard's sketch
  // and counters together: it lands in one window's sketch and totals, never split over two
  // (a sketch total above the report's total is refused by the coordinator).
  private void sample(Shard s, byte[] key, int partition, boolean salted) {
    if (s.untilSample < 0) {
      // A repeat is expected (markRepeat; the owner thread's own fields): the same record on
      // the same partition is not counted twice; a record on another partition is another.
      s.untilSample = s.savedUntil;
      if (partition == s.repeatPartition) {
        return;
      }
      if (s.untilSample > 0) {
        s.untilSample--;
        count(s, partition, salted);
        return;
      }
    }
    synchronized (s) {
      count(s, partition, salted);
      if (s.redraw) {
        // The reporter set a new rate: the rest of the window is sampled at it.
        s.redraw = false;
        s.untilSample = adaptive ? s.gap() : sampleEvery - 1;
        if (s.untilSample != 0) {
          s.untilSample--;
          return;
        }
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
    shard().bump(3);
  }

  private Shard shard() {
    Shard s = first;
    if (s != null && s.owner == Thread.currentThread()) {
      return s;
    }
    return otherShard();
  }

  private Shard otherShard() {
    Shard s = local.get();
    if (first == null) {
      first = s;
    }
    return s;
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
    if (surge.compareAndSet(0, fp) && surgeListener != null) {
      surgeListener.run();
    }
  }

  /** Called (on the sending thread, under no lock of the caller's) when a surge is flagged. */
  void onSurge(Runnable listener) {
    surgeListener = listener;
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

  /**
   * Records so far: salted, cold (every keyed record not salted), without a key. Read without
   * stopping the senders, so a figure may lag a concurrent record.
   */
  long[] counters() {
    long[] c = new long[3];
    for (Shard s : shards) {
      long salted = s.read(1);
      long keyed = s.read(0);
      long[] pc = s.partitionCounts;
      for (int p = 0; p < pc.length; p++) {
        keyed += (long) LONGS.getAcquire(pc, p);
      }
      c[0] += salted;
      c[1] += keyed - salted;
      c[2] += s.read(3);
    }
    return c;
  }

  /** Drains the window: totals, per-partition counts and the merged sketch (drain()). */
  Window drain(int partitionCount, long windowMs, long nextWindowMs) {
    Window w = new Window();
    w.partitionCounts = new long[Math.max(partitionCount, 0)];
    double windowRate = adaptive ? rate : fixedRate;
    double nextRate = windowRate;
    List<SpaceSaving> parts = new ArrayList<>();
    for (Shard s : shards) {
      synchronized (s) {
        w.sketchTotal += s.sketchTotal;
        s.sketchTotal = 0;
        if (s.sketch != null && s.sketch.size() > 0) {
          parts.add(s.sketch);
          s.sketch = new SpaceSaving(capacity);
        }
        long[] pc = s.partitionCounts;
        if (s.seenPartitions.length < pc.length) {
          s.seenPartitions = Arrays.copyOf(s.seenPartitions, pc.length);
        }
        for (int p = 0; p < pc.length; p++) {
          long cur = (long) LONGS.getAcquire(pc, p);
          long d = cur - s.seenPartitions[p];
          s.seenPartitions[p] = cur;
          w.total += d;
          if (p < w.partitionCounts.length) {
            w.partitionCounts[p] += d;
          }
        }
        long unknown = s.read(0);
        w.total += unknown - s.seenTotal;
        s.seenTotal = unknown;
      }
    }
    if (adaptive) {
      double expected = w.total;
      if (windowMs > nextWindowMs && nextWindowMs > 0) {
        expected *= (double) nextWindowMs / windowMs;
      }
      nextRate = expected > targetSamples
          ? Math.max(ADAPTIVE_MIN_RATE, targetSamples / expected) : 1.0;
      rate = nextRate;
      for (Shard s : shards) {
        synchronized (s) {
          if (s.rate != nextRate) {
            setShardRate(s, nextRate);
          }
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
