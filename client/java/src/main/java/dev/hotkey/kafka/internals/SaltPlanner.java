package dev.hotkey.kafka.internals;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The coordinator's load-aware salt planner and its sizing rules (common/src/salt_planner.cc:
 * plan_load_aware, salt_per_partition, scale_weights, salt_count_for_share,
 * shrink_sampling_noise, verify_table), for the local tables a producer plans while its list is
 * stale (LocalPlan). The same arithmetic in the same order, so both clients compute the same
 * tables from the same window (tests/data/vectors/local_tables.json). Pure; any thread.
 */
final class SaltPlanner {
  private SaltPlanner() {}

  /** The coordinator's default table sizing (kDefaultMinSalts, kDefaultMaxSalts, ...). */
  static final int DEFAULT_MIN_SALTS = 2;
  static final int DEFAULT_MAX_SALTS = 256;
  static final double DEFAULT_SALT_SHARE = 0.05;
  private static final int NONE = -1; // no salt found for a partition (UINT32_MAX in C++)

  /** One hot key to plan: its traffic (the unit of the cold load) and its most salts (0: P). */
  static final class Demand {
    final byte[] key;
    final double rate;
    final int maxSalts;

    Demand(byte[] key, double rate, int maxSalts) {
      this.key = key;
      this.rate = rate;
      this.maxSalts = maxSalts;
    }
  }

  /** Orders a before b when a > b (the C++ comparators' strict order; equal values tie). */
  private static int greater(double a, double b) {
    return a > b ? -1 : b > a ? 1 : 0;
  }

  private static void checkSpace(int partitions, byte[] separator) {
    if (partitions < 1) {
      throw new IllegalArgumentException(
          "salt planner: partition count must be >= 1, got " + partitions);
    }
    if (!Salts.validSeparator(separator)) {
      throw new IllegalArgumentException("salt planner: invalid separator (must be 1.."
          + Salts.MAX_SEPARATOR_BYTES + " bytes, none of them a decimal digit)");
    }
  }

  /**
   * Splits 10,000 in proportion to {@code amounts} (largest remainder), so the integer weights
   * sum to exactly 10,000; ties in remainders go to the earlier entry; equal shares when the
   * amounts sum to nothing.
   */
  static int[] scaleWeights(double[] amounts) {
    int n = amounts.length;
    int[] out = new int[n];
    if (n == 0) {
      return out;
    }
    double sum = 0;
    for (double a : amounts) {
      sum += a;
    }
    if (!(sum > 0)) {
      double[] equal = new double[n];
      Arrays.fill(equal, 1.0);
      return scaleWeights(equal);
    }
    double[] rem = new double[n];
    long given = 0;
    for (int i = 0; i < n; i++) {
      double exact = amounts[i] / sum * Salts.WEIGHT_SCALE;
      double fl = Math.floor(exact);
      out[i] = (int) fl;
      rem[i] = exact - fl;
      given += out[i];
    }
    Integer[] order = new Integer[n];
    for (int i = 0; i < n; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> greater(rem[a], rem[b])); // stable: ties keep earlier first
    for (int i = 0; given < Salts.WEIGHT_SCALE; i = (i + 1) % n, given++) {
      out[order[i]]++;
    }
    return out;
  }

  /**
   * For each partition, the smallest salt below the search limit whose salted key lands there,
   * or -1 when none was found.
   */
  static int[] saltPerPartition(HashFamily family, byte[] key, int partitions, byte[] separator) {
    checkSpace(partitions, separator);
    int[] out = new int[partitions];
    Arrays.fill(out, NONE);
    int missing = partitions;
    for (int salt = 0; salt < Salts.SEARCH_LIMIT && missing > 0; salt++) {
      int p = Salts.saltedPartition(family, key, separator, salt, partitions);
      if (out[p] == NONE) {
        out[p] = salt;
        missing--;
      }
    }
    return out;
  }

  /**
   * Water-filling (plan_load_aware): each key, heaviest first, goes to the least-loaded
   * partitions it reaches with a verified salt, weighted to level them as far as its rate
   * allows. One table per demand, in the order given, salts in salt order; zero-weight salts
   * dropped. IllegalArgumentException for an invalid space, a load not of size P or not finite
   * and >= 0, or a rate not finite and >= 0.
   */
  static List<List<HotKeyList.Salt>> planLoadAware(double[] coldLoad, List<Demand> demands,
      HashFamily family, int partitions, byte[] separator) {
    checkSpace(partitions, separator);
    if (coldLoad.length != partitions) {
      throw new IllegalArgumentException("salt planner: cold_load has " + coldLoad.length
          + " entries, expected one per partition (" + partitions + ")");
    }
    for (int p = 0; p < coldLoad.length; p++) {
      if (!Double.isFinite(coldLoad[p]) || coldLoad[p] < 0) {
        throw new IllegalArgumentException(
            "salt planner: cold_load[" + p + "] must be finite and >= 0");
      }
    }
    for (int i = 0; i < demands.size(); i++) {
      double r = demands.get(i).rate;
      if (!Double.isFinite(r) || r < 0) {
        throw new IllegalArgumentException(
            "salt planner: demand " + i + " rate must be finite and >= 0");
      }
    }
    double[] load = coldLoad.clone();
    List<List<HotKeyList.Salt>> tables = new ArrayList<>();
    Integer[] order = new Integer[demands.size()];
    for (int i = 0; i < order.length; i++) {
      tables.add(new ArrayList<>());
      order[i] = i;
    }
    // Heaviest keys first: they need the most room, and later (lighter) keys fill around them.
    Arrays.sort(order, (a, b) -> greater(demands.get(a).rate, demands.get(b).rate));
    for (int di : order) {
      Demand d = demands.get(di);
      int[] saltOf = saltPerPartition(family, d.key, partitions, separator);
      List<Integer> reach = new ArrayList<>(partitions);
      for (int p = 0; p < partitions; p++) {
        if (saltOf[p] != NONE) {
          reach.add(p);
        }
      }
      int maxSalts = d.maxSalts == 0 ? partitions : Math.min(d.maxSalts, partitions);
      if (reach.isEmpty()) {
        continue;
      }
      // Least loaded first; ties by partition id (a stable sort) so plans are deterministic.
      reach.sort((a, b) -> greater(load[b], load[a]));
      int m = Math.min(maxSalts, reach.size());
      // Water level over the j least-loaded partitions: (rate + their loads) / j, valid once it
      // does not exceed the next partition's load.
      int j = 1;
      double prefix = load[reach.get(0)];
      double level = d.rate + prefix;
      for (; j < m; j++) {
        level = (d.rate + prefix) / (double) j;
        if (level <= load[reach.get(j)]) {
          break;
        }
        prefix += load[reach.get(j)];
      }
      if (j == m) {
        level = (d.rate + prefix) / (double) m;
      }
      double[] amounts = new double[j];
      for (int i = 0; i < j; i++) {
        amounts[i] = Math.max(0.0, level - load[reach.get(i)]);
      }
      int[] weights = scaleWeights(amounts);
      List<HotKeyList.Salt> table = tables.get(di);
      for (int i = 0; i < j; i++) {
        if (weights[i] == 0) {
          continue;
        }
        int p = reach.get(i);
        table.add(new HotKeyList.Salt(saltOf[p], p, weights[i]));
        load[p] += d.rate * weights[i] / Salts.WEIGHT_SCALE;
      }
      table.sort((a, b) -> Integer.compareUnsigned(a.salt, b.salt));
    }
    return tables;
  }

  /**
   * How many salts a key carrying {@code share} of its topic's records gets:
   * ceil(share * partitions / saltShare) clamped to [min(minSalts, maxSalts), maxSalts] and at
   * most {@code partitions} (a non-finite or negative share counts as 0).
   */
  static int saltCountForShare(double share, int partitions, int minSalts, int maxSalts,
      double saltShare) {
    double want = Math.ceil(share * partitions / saltShare);
    if (!Double.isFinite(want) || want < 0) {
      want = 0;
    }
    long n = (long) Math.min(want, 1e9);
    n = Math.max(Math.min(minSalts, maxSalts), Math.min(n, maxSalts));
    return (int) Math.min(n, Math.max(partitions, 0));
  }

  /**
   * Pulls measured per-partition loads toward their mean by the part of their spread that
   * counting noise explains (Poisson: variance about the mean); spread beyond it is kept.
   */
  static void shrinkSamplingNoise(double[] load) {
    if (load.length < 2) {
      return;
    }
    double sum = 0;
    for (double v : load) {
      sum += v;
    }
    double mean = sum / load.length;
    if (!(mean > 0)) {
      return;
    }
    double var = 0;
    for (double v : load) {
      var += (v - mean) * (v - mean);
    }
    var /= load.length - 1;
    if (!(var > 0)) {
      return;
    }
    double keep = Math.max(0.0, 1.0 - mean / var);
    for (int i = 0; i < load.length; i++) {
      load[i] = mean + (load[i] - mean) * keep;
    }
  }

  /**
   * True when every salt recomputes to its partition with the family, partitions are distinct
   * and in range, and weights positive; an empty table or an invalid space never is.
   */
  static boolean verify(HashFamily family, byte[] key, List<HotKeyList.Salt> salts,
      int partitions, byte[] separator) {
    if (partitions < 1 || !Salts.validSeparator(separator) || salts.isEmpty()) {
      return false;
    }
    boolean[] used = new boolean[partitions];
    for (HotKeyList.Salt s : salts) {
      if (s.weight == 0 || s.partition < 0 || s.partition >= partitions || used[s.partition]) {
        return false;
      }
      used[s.partition] = true;
      if (Salts.saltedPartition(family, key, separator, s.salt, partitions) != s.partition) {
        return false;
      }
    }
    return true;
  }
}
