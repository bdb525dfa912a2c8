package dev.hotkey.kafka.bench;

/**
 * The keys of hotkey-loadgen's workload (tools/loadgen/workload.cc) for the Java fleets: with
 * probability {@code hotShare} the overlay key {@code hot-0}, otherwise a background key
 * {@code user-<rank>}, rank uniform over {@code keys} (zipf 0) or Zipf(z) by an explicit CDF.
 * The draws are loadgen's (std::mt19937_64 seeded with the seed, libstdc++'s
 * uniform_real_distribution on [0, 1)), so a Java producer and a hotkey-loadgen producer given
 * the same seed send the same keys in the same order: fleets compared side by side differ in
 * their library, not in their luck with the background keys.
 */
final class Workload {
  private final Mt19937_64 rng;
  private final double hotShare;
  private final int keys;
  private final double[] cdf;

  Workload(long seed, int keys, double zipf, double hotShare) {
    this.rng = new Mt19937_64(seed);
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
    double u = rng.unit();
    if (hotShare > 0) {
      if (u < hotShare) {
        return "hot-0";
      }
      u = rng.unit();
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

  /** std::mt19937_64 (the C++ standard's parameters, seeding and tempering). */
  static final class Mt19937_64 {
    private static final int NN = 312;
    private static final int MM = 156;
    private static final long MATRIX_A = 0xB5026F5AA96619E9L;
    private static final long UM = 0xFFFFFFFF80000000L;
    private static final long LM = 0x7FFFFFFFL;
    private final long[] mt = new long[NN];
    private int mti;

    Mt19937_64(long seed) {
      mt[0] = seed;
      for (int i = 1; i < NN; i++) {
        mt[i] = 6364136223846793005L * (mt[i - 1] ^ (mt[i - 1] >>> 62)) + i;
      }
      mti = NN;
    }

    long next() {
      if (mti >= NN) {
        for (int i = 0; i < NN; i++) {
          long x = (mt[i] & UM) | (mt[(i + 1) % NN] & LM);
          mt[i] = mt[(i + MM) % NN] ^ (x >>> 1) ^ ((x & 1L) != 0 ? MATRIX_A : 0L);
        }
        mti = 0;
      }
      long x = mt[mti++];
      x ^= (x >>> 29) & 0x5555555555555555L;
      x ^= (x << 17) & 0x71D67FFFEDA60000L;
      x ^= (x << 37) & 0xFFF7EEE000000000L;
      x ^= x >>> 43;
      return x;
    }

    /**
     * libstdc++'s generate_canonical for a 64-bit engine: the draw converted to double (round
     * to nearest) divided by 2^64, and kept below 1.
     */
    double unit() {
      long x = next();
      double d = x >= 0 ? (double) x : ((double) ((x >>> 1) | (x & 1L))) * 2.0;
      double u = d * 0x1p-64;
      return u >= 1.0 ? Math.nextDown(1.0) : u;
    }
  }
}
