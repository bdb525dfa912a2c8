package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.MergeContract;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** Salted keys and first-fit salt plans (common/src/partitioner.cc, salt_planner.cc). */
final class Salts {
  private Salts() {}

  static final byte[] DEFAULT_SEPARATOR =
      MergeContract.DEFAULT_SEPARATOR.getBytes(StandardCharsets.UTF_8);
  static final int MAX_SEPARATOR_BYTES = 8;
  static final int WEIGHT_SCALE = 10000;
  static final int SEARCH_LIMIT = 1 << 16;

  /** The decimal digits of an unsigned 32-bit salt. */
  static byte[] decimal(int salt) {
    return Integer.toUnsignedString(salt).getBytes(StandardCharsets.US_ASCII);
  }

  /** key + separator + decimal(salt). */
  static byte[] saltedKey(byte[] key, byte[] separator, int salt) {
    byte[] digits = decimal(salt);
    byte[] out = new byte[key.length + separator.length + digits.length];
    System.arraycopy(key, 0, out, 0, key.length);
    System.arraycopy(separator, 0, out, key.length, separator.length);
    System.arraycopy(digits, 0, out, key.length + separator.length, digits.length);
    return out;
  }

  static int saltedPartition(HashFamily family, byte[] key, byte[] separator, int salt,
      int partitions) {
    return Hashes.partitionFor(family, saltedKey(key, separator, salt), partitions);
  }

  /** 1..8 bytes, no decimal digit, valid UTF-8 (valid_separator). */
  static boolean validSeparator(byte[] sep) {
    if (sep.length == 0 || sep.length > MAX_SEPARATOR_BYTES) {
      return false;
    }
    for (byte b : sep) {
      if (b >= '0' && b <= '9') {
        return false;
      }
    }
    return KeyCodec.isValidUtf8(sep);
  }

  /**
   * First-fit: salts 0, 1, 2, ... keeping each whose salted key lands on a partition not yet
   * used, until min(count, partitions, 10000) partitions; equal weights summing to 10000.
   */
  static List<HotKeyList.Salt> plan(HashFamily family, byte[] key, int count, int partitions,
      byte[] separator) {
    int want = Math.min(Math.min(count, partitions), WEIGHT_SCALE);
    List<HotKeyList.Salt> out = new ArrayList<>(want);
    boolean[] used = new boolean[partitions];
    for (int salt = 0; salt < SEARCH_LIMIT && out.size() < want; salt++) {
      int p = saltedPartition(family, key, separator, salt, partitions);
      if (used[p]) {
        continue;
      }
      used[p] = true;
      out.add(new HotKeyList.Salt(salt, p, 0));
    }
    int n = out.size();
    if (n == 0) {
      return out;
    }
    // scale_weights of equal amounts: floor(10000 / n) each, the remainder to the first ones.
    int base = WEIGHT_SCALE / n;
    int extra = WEIGHT_SCALE - base * n;
    List<HotKeyList.Salt> weighted = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      HotKeyList.Salt s = out.get(i);
      weighted.add(new HotKeyList.Salt(s.salt, s.partition, base + (i < extra ? 1 : 0)));
    }
    return weighted;
  }
}
