package dev.hotkey.kafka.internals;

/** A topic's hash family; the codes are the binary report's (common/include/hotkey/partitioner.h). */
public enum HashFamily {
  MURMUR2("murmur2", 0),
  CRC32("crc32", 1),
  FNV1A("fnv1a", 2);

  private final String wireName;
  private final int code;

  HashFamily(String wireName, int code) {
    this.wireName = wireName;
    this.code = code;
  }

  public String wireName() {
    return wireName;
  }

  public int code() {
    return code;
  }

  /** The family named {@code name}, or null. */
  public static HashFamily parse(String name) {
    for (HashFamily f : values()) {
      if (f.wireName.equals(name)) {
        return f;
      }
    }
    return null;
  }
}
