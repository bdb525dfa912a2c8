package dev.hotkey.kafka.internals;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A topic's hot-key list (docs/CONTRACTS.md section 6) and its decoder, which refuses exactly
 * what common/src/hotkey_list.cc refuses, naming the same field (tests/data/vectors/lists.json):
 * every salt is recomputed with the list's family before the list can be used.
 */
public final class HotKeyList {
  /** One salt of a hot key's verified table. */
  public static final class Salt {
    public final int salt; // unsigned 32-bit
    public final int partition;
    public final int weight; // unsigned 32-bit, >= 1 in a valid list

    Salt(int salt, int partition, int weight) {
      this.salt = salt;
      this.partition = partition;
      this.weight = weight;
    }
  }

  /** One hot key with its table. */
  public static final class HotKey {
    public final byte[] key;
    public final List<Salt> salts;
    public final String source;

    HotKey(byte[] key, List<Salt> salts, String source) {
      this.key = key;
      this.salts = salts;
      this.source = source;
    }
  }

  public final String topic;
  public final long version; // unsigned 64-bit
  public final int partitions;
  public final HashFamily hash;
  public final byte[] separator;
  public final List<HotKey> keys;
  public final List<byte[]> denied;
  /**
   * Key prefixes under an operator's never_salt policy (informational for routing: the
   * coordinator never lists such a key; a producer's local tables leave them alone too).
   */
  public final List<byte[]> neverSalt;

  HotKeyList(String topic, long version, int partitions, HashFamily hash, byte[] separator,
      List<HotKey> keys, List<byte[]> denied, List<byte[]> neverSalt) {
    this.topic = topic;
    this.version = version;
    this.partitions = partitions;
    this.hash = hash;
    this.separator = separator;
    this.keys = Collections.unmodifiableList(keys);
    this.denied = Collections.unmodifiableList(denied);
    this.neverSalt = Collections.unmodifiableList(neverSalt);
  }

  // ReportLimits defaults (common/include/hotkey/report.h).
  static final int MAX_ITEMS = 65536;
  static final int MAX_KEY_BYTES = 4096;
  static final int MAX_PARTITIONS = 100000;
  static final int MAX_ID_BYTES = 256;

  static final BigInteger U64_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

  /** Kafka's topic name rule, [A-Za-z0-9._-]{1,249}. */
  public static boolean validTopicName(String t) {
    if (t.isEmpty() || t.length() > 249) {
      return false;
    }
    for (int i = 0; i < t.length(); i++) {
      char c = t.charAt(i);
      boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '.' || c == '_' || c == '-';
      if (!ok) {
        return false;
      }
    }
    return true;
  }

  /** Decodes and validates a list document (parse_list_json). */
  public static HotKeyList parse(byte[] utf8) throws DecodeException {
    String text = KeyCodec.utf8(utf8);
    if (text == null) {
      throw new DecodeException("hot-key list: invalid JSON: invalid UTF-8");
    }
    return parse(text);
  }

  public static HotKeyList parse(String text) throws DecodeException {
    Object docValue;
    try {
      docValue = Json.parse(text);
    } catch (Json.SyntaxError e) {
      throw new DecodeException("hot-key list: invalid JSON: " + e.getMessage());
    }
    return fromJson(docValue);
  }

  /** Validates an already parsed list document (an element of a subscription's answer). */
  static HotKeyList fromJson(Object docValue) throws DecodeException {
    if (!(docValue instanceof Map)) {
      throw new DecodeException("hot-key list: must be a JSON object");
    }
    Map<?, ?> doc = (Map<?, ?>) docValue;
    String topic = asString(require(doc, "", "topic"), "topic");
    long version = asU64(require(doc, "", "version"), "version", U64_MAX).longValue();
    int partitions = asU64(require(doc, "", "partitions"), "partitions",
        BigInteger.valueOf(MAX_PARTITIONS)).intValue();
    if (partitions < 1) {
      throw DecodeException.field("partitions", "must be in [1, " + MAX_PARTITIONS + "], got 0");
    }
    HashFamily hash = asHash(require(doc, "", "hash"), "hash");
    byte[] separator = Salts.DEFAULT_SEPARATOR;
    Object sepValue = find(doc, "separator");
    if (sepValue != null) {
      separator = asString(sepValue, "separator").getBytes(StandardCharsets.UTF_8);
    }
    long updatedAt = 0;
    Object up = find(doc, "updated_at_ms");
    if (up != null) {
      updatedAt = asU64(up, "updated_at_ms", BigInteger.valueOf(Long.MAX_VALUE)).longValue();
    }
    List<?> keysJson = asArray(require(doc, "", "keys"), "keys", MAX_ITEMS);
    List<HotKey> keys = new ArrayList<>(keysJson.size());
    List<double[]> rateShare = new ArrayList<>(keysJson.size());
    for (int i = 0; i < keysJson.size(); i++) {
      String path = "keys[" + i + "]";
      Map<?, ?> j = asObject(keysJson.get(i), path);
      byte[] key = readKey(j, path);
      String saltsPath = path + ".salts";
      List<?> saltsJson = asArray(require(j, path, "salts"), saltsPath, Math.max(partitions, 1));
      List<Salt> salts = new ArrayList<>(saltsJson.size());
      for (int k = 0; k < saltsJson.size(); k++) {
        String sp = saltsPath + "[" + k + "]";
        Map<?, ?> s = asObject(saltsJson.get(k), sp);
        int salt = asU64(require(s, sp, "salt"), sp + ".salt", BigInteger.valueOf(0xffffffffL))
            .intValue();
        int partition = asU64(require(s, sp, "partition"), sp + ".partition",
            BigInteger.valueOf(Integer.MAX_VALUE)).intValue();
        int weight = asU64(require(s, sp, "weight"), sp + ".weight",
            BigInteger.valueOf(0xffffffffL)).intValue();
        salts.add(new Salt(salt, partition, weight));
      }
      String source = "detected";
      Object src = find(j, "source");
      if (src != null) {
        source = asString(src, path + ".source");
        // "balance": a key salted to level partitions (issue 26); routed like a detected key.
        if (!source.equals("detected") && !source.equals("balance") && !source.equals("pinned")) {
          throw DecodeException.field(path + ".source",
              "must be \"detected\", \"balance\" or \"pinned\"");
        }
      }
      double rate = 0;
      double share = 0;
      Object r = find(j, "rate");
      if (r != null) {
        rate = asDouble(r, path + ".rate");
      }
      Object sh = find(j, "share");
      if (sh != null) {
        share = asDouble(sh, path + ".share");
      }
      keys.add(new HotKey(key, salts, source));
      rateShare.add(new double[] {rate, share});
    }
    List<byte[]> denied = new ArrayList<>();
    Object deniedValue = find(doc, "denied");
    if (deniedValue != null) {
      List<?> d = asArray(deniedValue, "denied", MAX_ITEMS);
      for (int i = 0; i < d.size(); i++) {
        String path = "denied[" + i + "]";
        denied.add(readKey(asObject(d.get(i), path), path));
      }
    }
    List<byte[]> neverSalt = new ArrayList<>();
    Object neverSaltValue = find(doc, "never_salt");
    if (neverSaltValue != null) {
      List<?> d = asArray(neverSaltValue, "never_salt", MAX_ITEMS);
      for (int i = 0; i < d.size(); i++) {
        String path = "never_salt[" + i + "]";
        neverSalt.add(readKey(asObject(d.get(i), path), path));
      }
    }
    HotKeyList list =
        new HotKeyList(topic, version, partitions, hash, separator, keys, denied, neverSalt);
    list.validate(updatedAt, rateShare);
    return list;
  }

  /** validate_list: the same checks in the same order as common/src/hotkey_list.cc. */
  private void validate(long updatedAt, List<double[]> rateShare) throws DecodeException {
    if (topic.getBytes(StandardCharsets.UTF_8).length > MAX_ID_BYTES || !validTopicName(topic)) {
      throw DecodeException.field("topic", "must be 1-249 characters of [A-Za-z0-9._-]");
    }
    if (partitions < 1 || partitions > MAX_PARTITIONS) {
      throw DecodeException.field("partitions",
          "must be in [1, " + MAX_PARTITIONS + "], got " + partitions);
    }
    if (!Salts.validSeparator(separator)) {
      throw DecodeException.field("separator",
          "must be 1-" + Salts.MAX_SEPARATOR_BYTES + " bytes with no decimal digit");
    }
    if (updatedAt < 0) {
      throw DecodeException.field("updated_at_ms", "must be a non-negative integer");
    }
    Map<ByteKey, Integer> prefixes = new HashMap<>();
    for (int i = 0; i < neverSalt.size(); i++) {
      String path = "never_salt[" + i + "]";
      byte[] prefix = neverSalt.get(i);
      if (prefix.length == 0) {
        throw DecodeException.field(path + ".key", "must not be empty");
      }
      Integer prev = prefixes.putIfAbsent(new ByteKey(prefix), i);
      if (prev != null) {
        throw DecodeException.field(path + ".key", "duplicate of never_salt[" + prev + "]");
      }
    }
    Map<ByteKey, Integer> seen = new HashMap<>();
    for (int i = 0; i < keys.size(); i++) {
      String path = "keys[" + i + "]";
      validateHotKey(keys.get(i), path, rateShare.get(i));
      Integer prev = seen.putIfAbsent(new ByteKey(keys.get(i).key), i);
      if (prev != null) {
        throw DecodeException.field(path + ".key", "duplicate of keys[" + prev + "]");
      }
    }
    Map<ByteKey, Integer> deniedSeen = new HashMap<>();
    for (int i = 0; i < denied.size(); i++) {
      String path = "denied[" + i + "]";
      byte[] key = denied.get(i);
      if (key.length > MAX_KEY_BYTES) {
        throw DecodeException.field(path + ".key", "key longer than " + MAX_KEY_BYTES + " bytes");
      }
      Integer prev = deniedSeen.putIfAbsent(new ByteKey(key), i);
      if (prev != null) {
        throw DecodeException.field(path + ".key", "duplicate of denied[" + prev + "]");
      }
      Integer hot = seen.get(new ByteKey(key));
      if (hot != null) {
        throw DecodeException.field(path + ".key", "is also listed as hot in keys[" + hot + "]");
      }
    }
  }

  private void validateHotKey(HotKey hk, String path, double[] rateShare)
      throws DecodeException {
    if (hk.key.length > MAX_KEY_BYTES) {
      throw DecodeException.field(path + ".key", "key longer than " + MAX_KEY_BYTES + " bytes");
    }
    double rate = rateShare[0];
    double share = rateShare[1];
    if (!Double.isFinite(rate) || rate < 0) {
      throw DecodeException.field(path + ".rate", "must be a finite number >= 0");
    }
    if (!Double.isFinite(share) || share < 0 || share > 1) {
      throw DecodeException.field(path + ".share", "must be a number in [0, 1]");
    }
    String saltsPath = path + ".salts";
    if (hk.salts.isEmpty()) {
      throw DecodeException.field(saltsPath, "must hold at least one salt");
    }
    if (hk.salts.size() > partitions) {
      throw DecodeException.field(saltsPath,
          "has " + hk.salts.size() + " salts for " + partitions + " partitions");
    }
    Map<Integer, Integer> used = new HashMap<>();
    for (int i = 0; i < hk.salts.size(); i++) {
      Salt s = hk.salts.get(i);
      String sp = saltsPath + "[" + i + "]";
      if (s.partition < 0 || s.partition >= partitions) {
        throw DecodeException.field(sp + ".partition", "must be in [0, " + partitions + ")");
      }
      if (s.weight == 0) {
        throw DecodeException.field(sp + ".weight", "must be >= 1");
      }
      Integer prev = used.putIfAbsent(s.partition, i);
      if (prev != null) {
        throw DecodeException.field(sp + ".partition",
            "partition " + s.partition + " already used by " + saltsPath + "[" + prev + "]");
      }
      // The table is only useful if producers land where it says: recompute with the family.
      int actual = Salts.saltedPartition(hash, hk.key, separator, s.salt, partitions);
      if (actual != s.partition) {
        throw DecodeException.field(sp, "salt " + Integer.toUnsignedString(s.salt)
            + " lands on partition " + actual + ", not " + s.partition + " (" + hash.wireName()
            + ", " + partitions + " partitions, separator '"
            + new String(separator, StandardCharsets.UTF_8) + "')");
      }
    }
  }

  // ---- json_fields equivalents ----

  private static Object find(Map<?, ?> obj, String name) {
    Object v = obj.get(name);
    return v == null || v == Json.NULL ? null : v;
  }

  private static Object require(Map<?, ?> obj, String parent, String name)
      throws DecodeException {
    Object v = find(obj, name);
    if (v == null) {
      throw DecodeException.field(parent.isEmpty() ? name : parent + "." + name, "is required");
    }
    return v;
  }

  private static Map<?, ?> asObject(Object v, String path) throws DecodeException {
    if (!(v instanceof Map)) {
      throw DecodeException.field(path, "must be an object");
    }
    return (Map<?, ?>) v;
  }

  private static List<?> asArray(Object v, String path, int max) throws DecodeException {
    if (!(v instanceof List)) {
      throw DecodeException.field(path, "must be an array");
    }
    List<?> l = (List<?>) v;
    if (l.size() > max) {
      throw DecodeException.field(path,
          "has " + l.size() + " elements, at most " + max + " allowed");
    }
    return l;
  }

  private static BigInteger asU64(Object v, String path, BigInteger max) throws DecodeException {
    if (!(v instanceof Json.Num) || !((Json.Num) v).isUnsigned()) {
      throw DecodeException.field(path, "must be a non-negative integer");
    }
    BigInteger n = ((Json.Num) v).integer;
    if (n.compareTo(max) > 0) {
      throw DecodeException.field(path, "must be at most " + max);
    }
    return n;
  }

  private static double asDouble(Object v, String path) throws DecodeException {
    if (!(v instanceof Json.Num)) {
      throw DecodeException.field(path, "must be a number");
    }
    double d = ((Json.Num) v).value;
    if (!Double.isFinite(d)) {
      throw DecodeException.field(path, "must be a finite number");
    }
    return d;
  }

  private static String asString(Object v, String path) throws DecodeException {
    if (!(v instanceof String)) {
      throw DecodeException.field(path, "must be a string");
    }
    return (String) v;
  }

  private static HashFamily asHash(Object v, String path) throws DecodeException {
    String name = asString(v, path);
    HashFamily f = HashFamily.parse(name);
    if (f == null) {
      throw DecodeException.field(path,
          "unknown hash family '" + name + "' (murmur2, crc32 or fnv1a)");
    }
    return f;
  }

  private static byte[] readKey(Map<?, ?> obj, String path) throws DecodeException {
    Object text = find(obj, "key");
    Object b64 = find(obj, "key_b64");
    if (text != null && b64 != null) {
      throw DecodeException.field(path, "has both key and key_b64; give one");
    }
    if (text == null && b64 == null) {
      throw DecodeException.field(path, "needs key or key_b64");
    }
    byte[] key;
    String keyPath;
    if (text != null) {
      keyPath = path + ".key";
      key = asString(text, keyPath).getBytes(StandardCharsets.UTF_8);
    } else {
      keyPath = path + ".key_b64";
      String encoded = asString(b64, keyPath);
      if (encoded.length() > (MAX_KEY_BYTES + 2) / 3 * 4) {
        throw DecodeException.field(keyPath, "key longer than " + MAX_KEY_BYTES + " bytes");
      }
      key = KeyCodec.base64Decode(encoded);
      if (key == null) {
        throw DecodeException.field(keyPath,
            "invalid base64 (standard alphabet, padded, no whitespace)");
      }
    }
    if (key.length > MAX_KEY_BYTES) {
      throw DecodeException.field(keyPath, "key longer than " + MAX_KEY_BYTES + " bytes");
    }
    return key;
  }

  /** byte[] with value equality, for maps. */
  static final class ByteKey {
    final byte[] bytes;
    private final int hash;

    ByteKey(byte[] bytes) {
      this.bytes = bytes;
      this.hash = Arrays.hashCode(bytes);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof ByteKey && Arrays.equals(bytes, ((ByteKey) o).bytes);
    }

    @Override
    public int hashCode() {
      return hash;
    }
  }
}
