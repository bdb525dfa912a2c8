package dev.hotkey.kafka.internals;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A producer's report for one topic and window (docs/CONTRACTS.md section 5) and its two
 * encodings, byte-exact with common/src/report.cc (tests/data/vectors/reports.json).
 */
final class Report {
  // The report's wire literals (docs/CONTRACTS.md sections 5 and 11), written only here.
  static final String BINARY_CONTENT_TYPE = "application/x-hotkey-report";
  static final String BATCH_CONTENT_TYPE = "application/x-hotkey-report-batch";
  static final String JSON_CONTENT_TYPE = "application/json";
  /** Kafka transport: the header of a reports-topic record, and its value (the format). */
  public static final String KAFKA_FORMAT_HEADER = "hotkey.report.v";
  public static final String KAFKA_FORMAT_VERSION = "1";
  static final int MAX_REPORTS_PER_BATCH = 1024;

  static final class Item {
    final byte[] key;
    final long count;
    final long error;

    Item(byte[] key, long count, long error) {
      this.key = key;
      this.count = count;
      this.error = error;
    }
  }

  String producer;
  String topic;
  int partitions;
  HashFamily hash = HashFamily.MURMUR2;
  byte[] separator = Salts.DEFAULT_SEPARATOR;
  long windowMs;
  double sampleRate = 1.0;
  long total;
  long[] partitionCounts = new long[0];
  long seq;
  long sentAtMs;
  long listVersion;
  int sketchCapacity;
  long sketchMin;
  long sketchTotal;
  List<Item> items = new ArrayList<>();

  private static void u32(ByteArrayOutputStream out, long v) {
    for (int i = 0; i < 4; i++) {
      out.write((int) (v >>> (8 * i)) & 0xff);
    }
  }

  private static void u64(ByteArrayOutputStream out, long v) {
    for (int i = 0; i < 8; i++) {
      out.write((int) (v >>> (8 * i)) & 0xff);
    }
  }

  private static void bytes(ByteArrayOutputStream out, byte[] b) {
    u32(out, b.length);
    out.write(b, 0, b.length);
  }

  /** application/x-hotkey-report: "HKR", version 1, little-endian fields in model order. */
  byte[] encodeBinary() {
    ByteArrayOutputStream out = new ByteArrayOutputStream(96 + 8 * partitionCounts.length
        + 24 * items.size());
    out.write('H');
    out.write('K');
    out.write('R');
    out.write(1);
    bytes(out, producer.getBytes(StandardCharsets.UTF_8));
    bytes(out, topic.getBytes(StandardCharsets.UTF_8));
    u32(out, partitions);
    out.write(hash.code());
    bytes(out, separator);
    u32(out, windowMs);
    u64(out, Double.doubleToRawLongBits(sampleRate));
    u64(out, total);
    u64(out, seq);
    u64(out, sentAtMs);
    u64(out, listVersion);
    u32(out, partitionCounts.length);
    for (long c : partitionCounts) {
      u64(out, c);
    }
    u32(out, sketchCapacity);
    u64(out, sketchMin);
    u64(out, sketchTotal);
    u32(out, items.size());
    for (Item it : items) {
      bytes(out, it.key);
      u64(out, it.count);
      u64(out, it.error);
    }
    return out.toByteArray();
  }

  /** The JSON form (report_to_json): same members, same order. */
  String toJson() {
    StringBuilder o = new StringBuilder(256 + 32 * items.size());
    o.append("{\"producer\":");
    Json.writeString(o, producer);
    o.append(",\"topic\":");
    Json.writeString(o, topic);
    o.append(",\"partitions\":").append(partitions);
    o.append(",\"hash\":\"").append(hash.wireName()).append('"');
    o.append(",\"separator\":");
    Json.writeString(o, new String(separator, StandardCharsets.UTF_8));
    o.append(",\"window_ms\":").append(windowMs);
    o.append(",\"sample_rate\":").append(jsonDouble(sampleRate));
    o.append(",\"total\":").append(Long.toUnsignedString(total));
    o.append(",\"partition_counts\":[");
    for (int i = 0; i < partitionCounts.length; i++) {
      if (i > 0) {
        o.append(',');
      }
      o.append(partitionCounts[i]);
    }
    o.append("],\"seq\":").append(Long.toUnsignedString(seq));
    o.append(",\"sent_at_ms\":").append(sentAtMs);
    o.append(",\"list_version\":").append(Long.toUnsignedString(listVersion));
    o.append(",\"sketch\":{\"capacity\":").append(sketchCapacity);
    o.append(",\"min\":").append(sketchMin);
    o.append(",\"total\":").append(sketchTotal);
    o.append(",\"items\":[");
    for (int i = 0; i < items.size(); i++) {
      if (i > 0) {
        o.append(',');
      }
      Item it = items.get(i);
      o.append('{');
      KeyCodec.writeKey(o, it.key);
      o.append(",\"count\":").append(it.count).append(",\"error\":").append(it.error).append('}');
    }
    o.append("]}}");
    return o.toString();
  }

  /** A double as the shortest text that reads back as the same value (1.0, 0.25, 1e-06...). */
  static String jsonDouble(double d) {
    if (d == Math.rint(d) && Math.abs(d) < 1e15) {
      return Long.toString((long) d) + ".0";
    }
    return Double.toString(d);
  }

  /** application/x-hotkey-report-batch: "HKB", version 1, u32 count, (u32 length, report)*. */
  static byte[] batchBinary(List<byte[]> reports) {
    if (reports.size() > MAX_REPORTS_PER_BATCH) {
      throw new IllegalArgumentException("a report batch holds at most 1024 reports");
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write('H');
    out.write('K');
    out.write('B');
    out.write(1);
    u32(out, reports.size());
    for (byte[] r : reports) {
      bytes(out, r);
    }
    return out.toByteArray();
  }

  /** {"reports": [report, ...]}. */
  static byte[] batchJson(List<byte[]> reports) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] head = "{\"reports\":[".getBytes(StandardCharsets.US_ASCII);
    out.write(head, 0, head.length);
    for (int i = 0; i < reports.size(); i++) {
      if (i > 0) {
        out.write(',');
      }
      out.write(reports.get(i), 0, reports.get(i).length);
    }
    out.write(']');
    out.write('}');
    return out.toByteArray();
  }
}
