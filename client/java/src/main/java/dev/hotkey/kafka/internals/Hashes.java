package dev.hotkey.kafka.internals;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.zip.CRC32;

/**
 * The partitioner families of docs/CONTRACTS.md section 1, byte-exact with common/src/partitioner.cc
 * (tests/data/vectors/hashes.json). murmur2 is Kafka's own (Utils.murmur2, seed 0x9747b28c).
 */
public final class Hashes {
  private Hashes() {}

  private static final VarHandle INT_LE =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

  /** Kafka's murmur2, the raw 32-bit value (as Utils.murmur2 returns it). */
  public static int murmur2(byte[] data) {
    return murmur2(data, 0, data.length);
  }

  @SuppressWarnings("fallthrough")
  public static int murmur2(byte[] data, int offset, int length) {
    final int seed = 0x9747b28c;
    final int m = 0x5bd1e995;
    final int r = 24;
    int h = seed ^ length;
    int length4 = length / 4;
    for (int i = 0; i < length4; i++) {
      // Four bytes little-endian in one load (the JIT makes it one unaligned mov); the same
      // value Kafka's byte-by-byte assembly gives.
      int k = (int) INT_LE.get(data, offset + i * 4);
      k *= m;
      k ^= k >>> r;
      k *= m;
      h *= m;
      h ^= k;
    }
    final int tail = offset + (length & ~3);
    switch (length % 4) {
      case 3:
        h ^= (data[tail + 2] & 0xff) << 16;
        // fall through
      case 2:
        h ^= (data[tail + 1] & 0xff) << 8;
        // fall through
      case 1:
        h ^= data[tail] & 0xff;
        h *= m;
        break;
      default:
        break;
    }
    h ^= h >>> 13;
    h *= m;
    h ^= h >>> 15;
    return h;
  }

  /** CRC-32 (IEEE, zlib's and librdkafka's rd_crc32), as an unsigned value in an int. */
  public static int crc32(byte[] data, int offset, int length) {
    CRC32 c = new CRC32();
    c.update(data, offset, length);
    return (int) c.getValue();
  }

  /** librdkafka's rd_fnv1a: 32-bit FNV-1a, then the absolute value as a signed int. */
  public static int fnv1a(byte[] data, int offset, int length) {
    int h = 0x811c9dc5;
    for (int i = 0; i < length; i++) {
      h ^= data[offset + i] & 0xff;
      h *= 0x01000193;
    }
    // rd_fnv1a: h = abs((int32)h), where abs(INT_MIN) stays INT_MIN (two's complement).
    return h < 0 ? -h : h;
  }

  /** The family's partitioning hash (unsigned, in an int): a keyed record lands on hash % P. */
  public static int familyHash(HashFamily family, byte[] data, int offset, int length) {
    switch (family) {
      case MURMUR2:
        return murmur2(data, offset, length) & 0x7fffffff;
      case CRC32:
        return crc32(data, offset, length);
      case FNV1A:
        return fnv1a(data, offset, length);
      default:
        return 0;
    }
  }

  /** family_hash % partitions, unsigned. */
  public static int partitionFor(HashFamily family, byte[] key, int partitions) {
    return partitionFor(family, key, 0, key.length, partitions);
  }

  public static int partitionFor(HashFamily family, byte[] key, int offset, int length,
      int partitions) {
    if (partitions < 1) {
      throw new IllegalArgumentException("partitions must be >= 1");
    }
    return Integer.remainderUnsigned(familyHash(family, key, offset, length), partitions);
  }
}
