package dev.hotkey.kafka.bench;

import java.util.SplittableRandom;

/**
 * The keys of hotkey-loadgen's workload (tools/loadgen/workload.cc) for the Java fleets: with
 * probability {@code hotShare} the overlay key {@code hot-0}, otherwise a background key
 * {@code user-<rank>}, rank uniform over {@code keys} (zipf 0) or Zipf(z) by an explicit CDF.
 */
final class Workload {
  private final SplittableRandom rng;
  private final double hotShare;
  private final int keys;
  private final double[] cdf;

  Workload(long seed, int keys, double zipf, double hotShare) {
    this.rng = new SplittableRandom(seed);
    this.keys = keys;
    this.hotShare = hotShare;
    if (zipf > 0) {
      cdf = new double[keys];
      double sum = 0;
      for (int r = 0; r < keys; r++) {
        sum += Math.pow(r + 1, -zipf);
        cdf[r] = sum;
      }
      for (int r = 0; r < keys; r++) {
        cdf[r] /= sum;
      }
      cdf[keys - 1] = 1.0;
    } else {
      cdf = null;
    }
  }

  /** The next record's key. */
  String next() {
    double u = rng.nextDouble();
    if (hotShare > 0) {
      if (u < hotShare) {
        return "hot-0";
      }
      u = rng.nextDouble();
    }
    int rank;
    if (cdf == null) {
      rank = Math.min((int) (u * keys), keys - 1);
    } else {
      int lo = 0;
      int hi = keys - 1;
      while (lo < hi) {
        int mid = (lo + hi) >>> 1;
        if (cdf[mid] < u) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      rank = lo;
    }
    return "user-" + rank;
  }
}
