package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyConfig;
import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.MergeContract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.function.IntUnaryOperator;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The send path's heap allocation per record, counted by the JVM for this thread
 * (com.sun.management.ThreadMXBean.getCurrentThreadAllocatedBytes): exact, so the bounds hold on
 * any machine, loaded or not, JIT-compiled or interpreted (the interpreter allocates at least
 * what compiled code does). A cold key, and in route mode a listed one, allocate nothing; the
 * smallest object is 16 bytes, so an average below 1 byte per record means none per record
 * (what remains is the sampler's rare samples).
 */
class AllocationTest {
  private static final String TOPIC = "orders";
  private static final int PARTITIONS = 24;
  private static final int KEYS = 1024;
  private static final int WARMUP = 20_000;
  private static final int RECORDS = 200_000;
  private static int clients;

  private HotkeyPartitioner partitioner;
  private HotkeyInterceptor interceptor;
  private final Cluster cluster = Lists.cluster(TOPIC, PARTITIONS);
  private final String[] keys = new String[KEYS];
  private final byte[][] keyBytes = new byte[KEYS][];
  private final byte[] hotBytes = "hot".getBytes(StandardCharsets.UTF_8);
  private final byte[] value = new byte[100];

  private void open(String mode) throws Exception {
    plugins = Plugins.open(Plugins.configs("allocation-test-" + (++clients),
        "hotkey.routing.mode", mode));
    interceptor = plugins.interceptor;
    partitioner = plugins.partitioner;
    // A listed key, so that cold keys take the path that looks them up.
    partitioner.client().topic(TOPIC)
        .publish(Lists.list(TOPIC, 1, PARTITIONS, "hot", 2500, 2500, 2500, 2500));
    for (int i = 0; i < KEYS; i++) {
      keys[i] = "customer-" + i;
      keyBytes[i] = keys[i].getBytes(StandardCharsets.UTF_8);
    }
  }

  private Plugins plugins;

  @AfterEach
  void close() {
    if (plugins != null) {
      plugins.close();
      plugins = null;
    }
  }

  /** Bytes this thread allocates per call of op, after a warm-up. */
  private static double bytesPerCall(IntUnaryOperator op) {
    com.sun.management.ThreadMXBean mx =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    int sink = 0;
    for (int i = 0; i < WARMUP; i++) {
      sink += op.applyAsInt(i);
    }
    long before = mx.getCurrentThreadAllocatedBytes();
    for (int i = 0; i < RECORDS; i++) {
      sink += op.applyAsInt(i);
    }
    long after = mx.getCurrentThreadAllocatedBytes();
    assertTrue(sink != Integer.MIN_VALUE); // keeps the calls' results live
    return (double) (after - before) / RECORDS;
  }

  @Test
  void coldKeyPartitionAllocatesNothing() throws Exception {
    for (String mode : new String[] {"route", "rekey"}) {
      open(mode);
      double perRecord = bytesPerCall(i -> partitioner.partition(TOPIC, keys[i & (KEYS - 1)],
          keyBytes[i & (KEYS - 1)], null, value, cluster));
      assertTrue(perRecord < 1.0, mode + ": " + perRecord + " bytes per cold record");
      close();
    }
  }

  @Test
  void coldKeyInterceptorAndPartitionerAllocateNothing() throws Exception {
    for (String mode : new String[] {"route", "rekey"}) {
      open(mode);
      // The records exist before: what is measured is what onSend and partition() add.
      @SuppressWarnings({"unchecked", "rawtypes"})
      ProducerRecord<Object, Object>[] records = new ProducerRecord[KEYS];
      for (int i = 0; i < KEYS; i++) {
        records[i] = new ProducerRecord<>(TOPIC, keys[i], value);
      }
      double perRecord = bytesPerCall(i -> {
        ProducerRecord<Object, Object> out = interceptor.onSend(records[i & (KEYS - 1)]);
        return partitioner.partition(TOPIC, out.key(), keyBytes[i & (KEYS - 1)], null, value,
            cluster);
      });
      assertSame(records[5], interceptor.onSend(records[5]));
      assertTrue(perRecord < 1.0, mode + ": " + perRecord + " bytes per cold record");
      close();
    }
  }

  @Test
  void hotKeyInRouteModeAllocatesNothing() throws Exception {
    open("route");
    ProducerRecord<Object, Object> record = new ProducerRecord<>(TOPIC, "hot", value);
    double perRecord = bytesPerCall(i -> {
      ProducerRecord<Object, Object> out = interceptor.onSend(record);
      return partitioner.partition(TOPIC, out.key(), hotBytes, null, value, cluster);
    });
    assertTrue(perRecord < 1.0, perRecord + " bytes per hot record");
  }

  /**
   * A rekeyed record is a new ProducerRecord with its header list (112 bytes with
   * compressed references); the salted key text and the header values come from the table.
   * Building them per record (as before) took 512.
   */
  @Test
  void hotKeyInRekeyModeAllocatesOnlyTheNewRecord() throws Exception {
    open("rekey");
    ProducerRecord<Object, Object> record = new ProducerRecord<>(TOPIC, "hot", value);
    ProducerRecord<Object, Object> first = interceptor.onSend(record);
    assertNotSame(record, first);
    assertEquals(2, first.headers().toArray().length);
    // The serializer's work (the salted key's bytes) is Kafka's, not the library's: done once
    // per salted key here.
    Map<String, byte[]> serialized = new HashMap<>();
    double perRecord = bytesPerCall(i -> {
      ProducerRecord<Object, Object> out = interceptor.onSend(record);
      String salted = (String) out.key();
      byte[] b = serialized.computeIfAbsent(salted, k -> k.getBytes(StandardCharsets.UTF_8));
      return partitioner.partition(TOPIC, salted, b, null, value, cluster);
    });
    assertTrue(perRecord < 160, perRecord + " bytes per rekeyed record");
  }
}
