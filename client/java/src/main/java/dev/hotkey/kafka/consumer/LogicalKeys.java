package dev.hotkey.kafka.consumer;

import dev.hotkey.kafka.MergeContract;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.OptionalLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * Recovers a consumed record's logical key by merge contract versions 1 and 2 (docs/CLIENT.md
 * "Merge contract", rule 3), byte for byte as the C++ client's {@code recover_logical_key}:
 *
 * <ol>
 *   <li>a valid {@code hotkey.salt} header (ASCII decimal, unsigned 32-bit) marks the record
 *       salted with that salt; the logical key is the key without the suffix
 *       {@code <separator><salt>} when the key ends with exactly that (rekey mode), else the key
 *       itself (route mode);
 *   <li>else a {@code hotkey.unsalted} header (version 2) means the key is the logical key,
 *       unsalted;
 *   <li>else {@link KeyRecovery#HEADERS_THEN_SUFFIX} reads a key ending in
 *       the separator and a canonical decimal salt as salted; {@link KeyRecovery#HEADERS_ONLY}
 *       never looks at the key.
 * </ol>
 *
 * <p>The separator is the topic's (the coordinator's {@code separator} setting, which its lists
 * carry); {@link MergeContract#DEFAULT_SEPARATOR} unless configured otherwise.
 */
public final class LogicalKeys {
  private LogicalKeys() {}

  private static final long U32_MAX = 0xffffffffL;

  /** The record's logical key, with the default separator and recovery. */
  public static RecoveredKey recover(ConsumerRecord<byte[], ?> record) {
    return recover(record.key(), record.headers(), MergeContract.DEFAULT_SEPARATOR,
        KeyRecovery.HEADERS_THEN_SUFFIX);
  }

  /** The logical key of {@code key} (null: no key) given the record's headers (may be null). */
  public static RecoveredKey recover(byte[] key, Headers headers, String separator,
      KeyRecovery mode) {
    return recover(key, text(headers, MergeContract.SALT_HEADER),
        text(headers, MergeContract.VERSION_HEADER),
        headers != null && headers.lastHeader(MergeContract.UNSALTED_HEADER) != null, separator,
        mode);
  }

  private static String text(Headers headers, String name) {
    if (headers == null) {
      return null;
    }
    Header h = headers.lastHeader(name);
    return h == null || h.value() == null ? null : new String(h.value(), StandardCharsets.US_ASCII);
  }

  /**
   * The pure form of version 1 ({@code recover_logical_key(key, salt_header, version_header,
   * separator, mode)}): the header values as text, null when absent. A header that is not a
   * plain decimal number in range is ignored, as if absent.
   */
  public static RecoveredKey recover(byte[] key, String saltHeader, String versionHeader,
      String separator, KeyRecovery mode) {
    return recover(key, saltHeader, versionHeader, false, separator, mode);
  }

  /**
   * The pure form of both versions ({@code recover_logical_key(key, MergeHeaders, separator,
   * mode)}): {@code unsalted} is whether the record carries {@code hotkey.unsalted}.
   */
  public static RecoveredKey recover(byte[] key, String saltHeader, String versionHeader,
      boolean unsalted, String separator, KeyRecovery mode) {
    long version = versionHeader == null ? 0 : decimal(versionHeader, -1L).orElse(0);
    if (key == null) {
      return new RecoveredKey(null, false, 0, version, false);
    }
    byte[] sep = separator.getBytes(StandardCharsets.UTF_8);
    if (saltHeader != null) {
      OptionalLong parsed = decimal(saltHeader, U32_MAX);
      if (parsed.isPresent()) {
        long salt = parsed.getAsLong();
        byte[] suffix = suffix(sep, salt);
        byte[] logical = endsWith(key, suffix)
            ? Arrays.copyOf(key, key.length - suffix.length) : key;
        return new RecoveredKey(logical, true, salt, version, true);
      }
    }
    if (!unsalted && mode == KeyRecovery.HEADERS_THEN_SUFFIX) {
      int at = lastIndexOf(key, sep);
      if (at >= 0) {
        long salt = canonicalSalt(key, at + sep.length);
        if (salt >= 0) {
          return new RecoveredKey(Arrays.copyOf(key, at), true, salt, version, false);
        }
      }
    }
    return new RecoveredKey(key, false, 0, version, false);
  }

  /**
   * parse_decimal: 1-20 ASCII digits (leading zeros allowed) whose unsigned value is at most
   * {@code max} (compared unsigned: -1 allows the whole 64-bit range); empty otherwise.
   */
  static OptionalLong decimal(String text, long max) {
    if (text.isEmpty() || text.length() > 20) {
      return OptionalLong.empty();
    }
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < '0' || c > '9') {
        return OptionalLong.empty();
      }
    }
    long v;
    try {
      v = Long.parseUnsignedLong(text);
    } catch (NumberFormatException e) {
      return OptionalLong.empty();
    }
    return Long.compareUnsigned(v, max) > 0 ? OptionalLong.empty() : OptionalLong.of(v);
  }

  /** split_salted_key's digits: 1-10, canonical ("0" or no leading zero), at most 2^32-1. */
  private static long canonicalSalt(byte[] key, int from) {
    int n = key.length - from;
    if (n < 1 || n > 10 || (n > 1 && key[from] == '0')) {
      return -1;
    }
    long v = 0;
    for (int i = from; i < key.length; i++) {
      if (key[i] < '0' || key[i] > '9') {
        return -1;
      }
      v = v * 10 + (key[i] - '0');
    }
    return v <= U32_MAX ? v : -1;
  }

  private static byte[] suffix(byte[] sep, long salt) {
    byte[] digits = Long.toString(salt).getBytes(StandardCharsets.US_ASCII);
    byte[] out = Arrays.copyOf(sep, sep.length + digits.length);
    System.arraycopy(digits, 0, out, sep.length, digits.length);
    return out;
  }

  private static boolean endsWith(byte[] key, byte[] suffix) {
    if (key.length < suffix.length) {
      return false;
    }
    int off = key.length - suffix.length;
    for (int i = 0; i < suffix.length; i++) {
      if (key[off + i] != suffix[i]) {
        return false;
      }
    }
    return true;
  }

  private static int lastIndexOf(byte[] key, byte[] sep) {
    if (sep.length == 0) {
      return -1;
    }
    outer:
    for (int i = key.length - sep.length; i >= 0; i--) {
      for (int j = 0; j < sep.length; j++) {
        if (key[i + j] != sep[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}
