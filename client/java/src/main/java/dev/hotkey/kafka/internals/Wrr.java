package dev.hotkey.kafka.internals;

/** The smooth weighted round-robin order (client/src/routing_table.cc smooth_wrr_sequence). */
final class Wrr {
  private Wrr() {}

  static final int MAX_LEN = 1024;

  /**
   * Salt indices in pick order: index i appears weights[i] times after the weights are reduced
   * by their gcd and, when they sum to more than maxLen, scaled down to about maxLen (every
   * salt keeps at least one step). Weights are unsigned 32-bit values.
   */
  static short[] sequence(int[] weights, int maxLen) {
    long[] w = new long[weights.length];
    long g = 0;
    for (int i = 0; i < weights.length; i++) {
      w[i] = Integer.toUnsignedLong(weights[i]);
      g = gcd(g, w[i]);
    }
    if (g == 0) {
      return new short[0];
    }
    long total = 0;
    for (int i = 0; i < w.length; i++) {
      w[i] /= g;
      total += w[i];
    }
    if (total > maxLen) {
      long scaled = 0;
      for (int i = 0; i < w.length; i++) {
        w[i] = Math.max(1, (w[i] * maxLen + total / 2) / total);
        scaled += w[i];
      }
      total = scaled;
    }
    short[] seq = new short[(int) total];
    long[] current = new long[w.length];
    for (int n = 0; n < total; n++) {
      int best = 0;
      for (int i = 0; i < w.length; i++) {
        current[i] += w[i];
        if (current[i] > current[best]) {
          best = i;
        }
      }
      current[best] -= total;
      seq[n] = (short) best;
    }
    return seq;
  }

  private static long gcd(long a, long b) {
    while (b != 0) {
      long t = a % b;
      a = b;
      b = t;
    }
    return a;
  }
}
