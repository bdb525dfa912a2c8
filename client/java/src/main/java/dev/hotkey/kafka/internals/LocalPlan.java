package dev.hotkey.kafka.internals;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Local tables (docs/CLIENT.md, "Local tables"; client/src/local_plan.cc): the salt tables a
 * producer plans for itself while its list of a topic is stale. One pure decision over one
 * report window: which keys the window shows at the hot threshold that the last list leaves
 * unsalted (and neither denies nor covers by a never_salt prefix), and their verified load-aware
 * tables, planned with the coordinator's planner against the window's own per-partition counts.
 * The C++ client makes the same decisions (tests/data/vectors/local_tables.json).
 */
final class LocalPlan {
  /** At most this many keys per topic have a local table (the largest first). */
  static final int MAX_LOCAL_KEYS = 64;

  /** One window of a stale topic, and what the last list said. */
  static final class Input {
    int partitions; // the live partition count (>= 1)
    HashFamily family = HashFamily.MURMUR2;
    byte[] separator = Salts.DEFAULT_SEPARATOR;
    // The window: records per partition (every keyed record), keyed records, records the
    // sketch saw (sampled), and the sketch's items (sampled counts, error bounds).
    long[] partitionCounts = new long[0];
    long total;
    long sketchTotal;
    List<Report.Item> items = new ArrayList<>();
    double surgeFactor = 1.0; // the hot threshold is surgeFactor / partitions of the window
    // From the last list (empty without one).
    List<byte[]> listed = new ArrayList<>();
    List<byte[]> denied = new ArrayList<>();
    List<byte[]> neverSalt = new ArrayList<>();
    // The keys salted by the local table now (planned for `partitions`).
    List<HotKeyList.HotKey> current = new ArrayList<>();
  }

  /** The local table after the window: kept keys (tables unchanged), then the added ones. */
  final List<HotKeyList.HotKey> keys = new ArrayList<>();
  final List<byte[]> added = new ArrayList<>();
  final List<byte[]> dropped = new ArrayList<>();

  boolean changed() {
    return !added.isEmpty() || !dropped.isEmpty();
  }

  private LocalPlan() {}

  /**
   * Whether a key with {@code guaranteed} sampled records (count - error) in a window of
   * {@code total} keyed records, {@code sketchTotal} of them sampled, is at the hot threshold:
   * the sampler's surge rule (surgeFactor / partitions of the sampled records, at least 32
   * records scaled, and 16 samples when the window was sampled below rate 1).
   */
  static boolean atHotThreshold(long guaranteed, long sketchTotal, long total, int partitions,
      double surgeFactor) {
    if (partitions < 1 || sketchTotal == 0 || guaranteed == 0) {
      return false;
    }
    double g = (double) guaranteed;
    if (g * partitions < surgeFactor * (double) sketchTotal) {
      return false;
    }
    boolean sampled = sketchTotal < total;
    double scale = sampled ? (double) total / (double) sketchTotal : 1;
    if (g * scale < Sampler.SURGE_MIN_RECORDS) {
      return false;
    }
    return !sampled || guaranteed >= Sampler.SURGE_MIN_SAMPLED;
  }

  private static boolean contains(List<byte[]> keys, byte[] key) {
    for (byte[] k : keys) {
      if (Arrays.equals(k, key)) {
        return true;
      }
    }
    return false;
  }

  private static boolean underPrefix(List<byte[]> prefixes, byte[] key) {
    for (byte[] p : prefixes) {
      if (p.length <= key.length && Arrays.equals(key, 0, p.length, p, 0, p.length)) {
        return true;
      }
    }
    return false;
  }

  private static long guaranteed(Report.Item item) {
    return item.count - Math.min(item.error, item.count);
  }

  /**
   * The decision for one window (IllegalArgumentException for partitions < 1, partition counts
   * not of size partitions, or an invalid separator when there is a key to plan):
   * <ul>
   * <li>a current key stays while its guaranteed share is at least half the hot threshold (a
   *     key that cooled off, or left the sketch, is dropped);
   * <li>a key at the threshold is added unless the last list salts it, denies it or one of its
   *     never_salt prefixes starts it; at most MAX_LOCAL_KEYS keys in all, largest first;
   * <li>the added keys are planned together by the load-aware planner: demand the key's records
   *     ((count - error / 2) scaled by total / sketchTotal), cold load the partition counts less
   *     each added key's records on its home partition, shrunk by the counting noise; salts per
   *     key by the coordinator's default sizing. A key whose table does not verify is not added.
   * </ul>
   */
  static LocalPlan plan(Input in) {
    if (in.partitions < 1) {
      throw new IllegalArgumentException("local tables: partitions must be >= 1");
    }
    if (in.partitionCounts.length != in.partitions) {
      throw new IllegalArgumentException("local tables: " + in.partitionCounts.length
          + " partition counts for " + in.partitions + " partitions");
    }
    double scale = in.sketchTotal > 0 && in.total > in.sketchTotal
        ? (double) in.total / (double) in.sketchTotal : 1.0;
    LocalPlan out = new LocalPlan();
    // Current keys: kept while at least half the threshold (the hysteresis of the
    // coordinator's detector, which lists at the threshold and lets go well below it).
    for (HotKeyList.HotKey k : in.current) {
      Report.Item item = find(in.items, k.key);
      long g = item != null ? guaranteed(item) : 0;
      if (atHotThreshold(2 * g, in.sketchTotal, in.total, in.partitions, in.surgeFactor)) {
        out.keys.add(k);
      } else {
        out.dropped.add(k.key);
      }
    }
    // New keys at the threshold that the last list leaves to this producer.
    List<Report.Item> candidates = new ArrayList<>();
    List<Double> records = new ArrayList<>();
    for (Report.Item item : in.items) {
      if (!atHotThreshold(guaranteed(item), in.sketchTotal, in.total, in.partitions,
          in.surgeFactor)) {
        continue;
      }
      // An empty key under crc32 is partitioned at random by librdkafka: never a table's.
      if (item.key.length == 0 && in.family == HashFamily.CRC32) {
        continue;
      }
      if (contains(in.listed, item.key) || contains(in.denied, item.key)
          || underPrefix(in.neverSalt, item.key)) {
        continue;
      }
      boolean current = false;
      for (HotKeyList.HotKey k : in.current) {
        current |= Arrays.equals(k.key, item.key);
      }
      if (current) {
        continue;
      }
      candidates.add(item);
      records.add(((double) item.count - 0.5 * (double) item.error) * scale);
    }
    Integer[] order = new Integer[candidates.size()];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> {
      double ra = records.get(a);
      double rb = records.get(b);
      if (ra != rb) {
        return ra > rb ? -1 : 1;
      }
      return Arrays.compareUnsigned(candidates.get(a).key, candidates.get(b).key);
    });
    int room = Math.max(0, MAX_LOCAL_KEYS - out.keys.size());
    int n = Math.min(room, order.length);
    if (n == 0) {
      return out;
    }
    // Cold load: what the window put on each partition, less the new keys' records, which went
    // to their home partitions unsalted. Keys already salted (by the list or the local table)
    // stay in it: their spread is part of the load the new tables level.
    double[] cold = new double[in.partitions];
    for (int p = 0; p < in.partitions; p++) {
      cold[p] = (double) in.partitionCounts[p];
    }
    List<SaltPlanner.Demand> demands = new ArrayList<>();
    double total = (double) in.total;
    for (int i = 0; i < n; i++) {
      Report.Item c = candidates.get(order[i]);
      double r = records.get(order[i]);
      int home = Hashes.partitionFor(in.family, c.key, in.partitions);
      cold[home] = Math.max(0.0, cold[home] - r);
      double share = total > 0 ? Math.min(1.0, r / total) : 0.0;
      demands.add(new SaltPlanner.Demand(c.key, r, SaltPlanner.saltCountForShare(share,
          in.partitions, SaltPlanner.DEFAULT_MIN_SALTS, SaltPlanner.DEFAULT_MAX_SALTS,
          SaltPlanner.DEFAULT_SALT_SHARE)));
    }
    SaltPlanner.shrinkSamplingNoise(cold);
    List<List<HotKeyList.Salt>> tables =
        SaltPlanner.planLoadAware(cold, demands, in.family, in.partitions, in.separator);
    for (int i = 0; i < n; i++) {
      byte[] key = demands.get(i).key;
      if (!SaltPlanner.verify(in.family, key, tables.get(i), in.partitions, in.separator)) {
        continue; // empty: nothing to route
      }
      out.added.add(key);
      out.keys.add(new HotKeyList.HotKey(key, tables.get(i), "local"));
    }
    return out;
  }

  private static Report.Item find(List<Report.Item> items, byte[] key) {
    for (Report.Item it : items) {
      if (Arrays.equals(it.key, key)) {
        return it;
      }
    }
    return null;
  }
}
