package dev.hotkey.kafka.consumer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hotkey.kafka.MergeContract;
import dev.hotkey.kafka.internals.TestData;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/**
 * The consumer side of merge contract version 1, case for case with the C++ client's
 * tests/client/merge_test.cc, plus the shared salted-key vectors and the deserializer.
 */
class MergeContractTest {
  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static RecoveredKey recover(String key, String salt, String version) {
    return LogicalKeys.recover(b(key), salt, version, "#", KeyRecovery.HEADERS_THEN_SUFFIX);
  }

  @Test
  void headersFirst() {
    RecoveredKey r = recover("order-1#3", "3", "12");
    assertEquals("order-1", r.logicalKeyText());
    assertTrue(r.salted());
    assertTrue(r.fromHeaders());
    assertEquals(3, r.salt());
    assertEquals(12, r.version());
    // Route mode: the key is already logical.
    r = recover("order-1", "3", "12");
    assertEquals("order-1", r.logicalKeyText());
    assertTrue(r.salted());
    // A logical key that itself ends in #<digits> is kept whole when the header says another salt.
    assertEquals("acct#7", recover("acct#7", "2", "1").logicalKeyText());
    assertEquals("acct#7", recover("acct#7#2", "2", "1").logicalKeyText());
  }

  @Test
  void suffixSecondAndHeadersOnly() {
    RecoveredKey r = recover("k#15", null, null);
    assertEquals("k", r.logicalKeyText());
    assertTrue(r.salted());
    assertFalse(r.fromHeaders());
    assertEquals(15, r.salt());
    r = LogicalKeys.recover(b("k#15"), null, null, "#", KeyRecovery.HEADERS_ONLY);
    assertEquals("k#15", r.logicalKeyText());
    assertFalse(r.salted());
    r = recover("plain", null, null);
    assertEquals("plain", r.logicalKeyText());
    assertFalse(r.salted());
    r = LogicalKeys.recover(b("k::4"), null, null, "::", KeyRecovery.HEADERS_THEN_SUFFIX);
    assertEquals("k", r.logicalKeyText());
    // Only canonical salts: what the producer writes ("0", no leading zero, at most 2^32-1).
    assertFalse(recover("k#07", null, null).salted());
    assertTrue(recover("k#0", null, null).salted());
    assertTrue(recover("k#4294967295", null, null).salted());
    assertFalse(recover("k#4294967296", null, null).salted());
    assertFalse(recover("k#1x", null, null).salted());
  }

  @Test
  void ignoresMalformedHeaders() {
    RecoveredKey r = LogicalKeys.recover(b("k#1"), "x1", "-3", "#", KeyRecovery.HEADERS_ONLY);
    assertFalse(r.salted());
    assertEquals(0, r.version());
    assertEquals("k#1", r.logicalKeyText());
    assertFalse(recover("k", "99999999999", null).salted()); // beyond uint32
    assertEquals(-1L, recover("k", null, "18446744073709551615").version()); // 2^64-1, unsigned
    assertEquals(0, recover("k", null, "18446744073709551616").version());
  }

  /** Every salted key of tests/data/vectors/salted_keys.json (from the C++ code) splits back. */
  @Test
  void theSharedSaltedKeysSplitBackToTheirKeys() throws Exception {
    int n = 0;
    for (Object o : TestData.list(TestData.vectors("salted_keys.json").get("encodings"))) {
      Map<?, ?> v = TestData.map(o);
      byte[] key = TestData.hex(v.get("key"));
      String sep = new String(TestData.hex(v.get("separator")), StandardCharsets.UTF_8);
      byte[] salted = TestData.hex(v.get("salted"));
      long salt = TestData.num(v.get("salt"));
      RecoveredKey byHeader = LogicalKeys.recover(salted, Long.toString(salt), "5", sep,
          KeyRecovery.HEADERS_ONLY);
      assertArrayEquals(key, byHeader.logicalKey(), v.toString());
      assertEquals(salt, byHeader.salt());
      RecoveredKey bySuffix = LogicalKeys.recover(salted, null, null, sep,
          KeyRecovery.HEADERS_THEN_SUFFIX);
      assertArrayEquals(key, bySuffix.logicalKey(), v.toString());
      assertEquals(salt, bySuffix.salt());
      n++;
    }
    assertTrue(n > 100, n + " vectors");
  }

  /**
   * tests/data/vectors/merge_contract.json (from the C++ code): key recovery of both contract
   * versions, the hotkey.unsalted header of version 2 included, through the pure form and
   * through the record's headers.
   */
  @Test
  void theSharedMergeContractVectorsRecoverAsTheCppClient() throws Exception {
    int n = 0;
    int unsalted = 0;
    for (Object o : TestData.list(TestData.vectors("merge_contract.json").get("recover"))) {
      Map<?, ?> v = TestData.map(o);
      byte[] key = TestData.hex(v.get("key"));
      String sep = new String(TestData.hex(v.get("separator")), StandardCharsets.UTF_8);
      Map<?, ?> h = TestData.map(v.get("headers"));
      String salt = (String) h.get("hotkey.salt");
      String version = (String) h.get("hotkey.version");
      boolean isUnsalted = h.containsKey("hotkey.unsalted");
      KeyRecovery mode = "headers_only".equals(v.get("mode"))
          ? KeyRecovery.HEADERS_ONLY : KeyRecovery.HEADERS_THEN_SUFFIX;
      RecoveredKey want = new RecoveredKey(TestData.hex(v.get("logical_key")),
          (Boolean) v.get("salted"), TestData.num(v.get("salt")),
          Long.parseUnsignedLong((String) v.get("version")), (Boolean) v.get("from_headers"));
      assertEquals(want, LogicalKeys.recover(key, salt, version, isUnsalted, sep, mode),
          v.toString());
      RecordHeaders headers = new RecordHeaders();
      if (salt != null) {
        headers.add(MergeContract.SALT_HEADER, salt.getBytes(StandardCharsets.US_ASCII));
      }
      if (version != null) {
        headers.add(MergeContract.VERSION_HEADER, version.getBytes(StandardCharsets.US_ASCII));
      }
      if (isUnsalted) {
        headers.add(MergeContract.UNSALTED_HEADER, new byte[0]);
        unsalted++;
      }
      assertEquals(want, LogicalKeys.recover(key, headers, sep, mode), v.toString());
      n++;
    }
    assertTrue(n >= 10 && unsalted >= 2, n + " vectors, " + unsalted + " unsalted");
  }

  private static ConsumerRecord<String, String> rec(String key, int partition, long offset,
      long ts, String value) {
    return new ConsumerRecord<>("t", partition, offset, ts, TimestampType.CREATE_TIME, -1, -1,
        key, value, new RecordHeaders(), java.util.Optional.empty());
  }

  private static List<String> values(List<ConsumerRecord<String, String>> rs) {
    List<String> out = new ArrayList<>();
    rs.forEach(r -> out.add(r.value()));
    return out;
  }

  @Test
  void groupsPerLogicalKeyInTimestampOrderUpToTheWatermark() {
    SubstreamMerger<String, String> m = new SubstreamMerger<>(100);
    // Two sub-streams of "hot" (salts on partitions 2 and 5), one cold key.
    assertTrue(m.add(rec("hot", 2, 10, 100, "a")));
    assertTrue(m.add(rec("hot", 2, 11, 300, "c")));
    assertTrue(m.add(rec("hot", 5, 7, 200, "b")));
    assertTrue(m.add(rec("hot", 5, 8, 400, "d")));
    assertTrue(m.add(rec("cold", 1, 1, 150, "x")));
    assertEquals(2, m.substreams("hot"));
    assertEquals(1, m.substreams("cold"));
    Map<String, List<ConsumerRecord<String, String>>> out = m.drain(300);
    assertEquals(List.of("a", "b", "c"), values(out.get("hot")));
    assertEquals(List.of("x"), values(out.get("cold")));
    assertEquals(1, m.buffered());
    out = m.drain(1000);
    assertEquals(List.of("d"), values(out.get("hot")));
    assertEquals(0, m.buffered());
  }

  @Test
  void boundedBuffer() {
    SubstreamMerger<String, String> m = new SubstreamMerger<>(2);
    assertTrue(m.add(rec("k", 0, 0, 1, "")));
    assertTrue(m.add(rec("k", 0, 1, 2, "")));
    assertFalse(m.add(rec("k", 0, 2, 3, "")));
    assertThrows(IllegalArgumentException.class, () -> new SubstreamMerger<String, String>(0));
  }

  /**
   * The sub-stream order holds even when timestamps go back within a partition (two producers
   * writing one salted key's sub-stream): a sub-stream's later record never comes first, and
   * waits for the watermark with the record before it. Ties go by partition, then offset.
   */
  @Test
  void aSubStreamKeepsItsOrderWhenTimestampsGoBack() {
    SubstreamMerger<String, String> m = new SubstreamMerger<>(100);
    m.add(rec("hot", 3, 20, 500, "p3-first"));
    m.add(rec("hot", 3, 21, 100, "p3-second")); // an earlier timestamp, a later offset
    m.add(rec("hot", 1, 5, 300, "p1"));
    m.add(rec("hot", 0, 9, 300, "p0-tie"));
    assertEquals(List.of("p0-tie", "p1"), values(m.drain(400).get("hot")));
    assertEquals(List.of("p3-first", "p3-second"), values(m.drain(500).get("hot")));
  }

  @Test
  void theDeserializerHandsTheInnerOneTheLogicalKey() {
    LogicalKeyDeserializer<String> d = new LogicalKeyDeserializer<>();
    Map<String, Object> c = new HashMap<>();
    c.put(LogicalKeyDeserializer.INNER_CONFIG, StringDeserializer.class.getName());
    d.configure(c, true);
    RecordHeaders h = new RecordHeaders();
    h.add(MergeContract.SALT_HEADER, b("3"));
    h.add(MergeContract.VERSION_HEADER, b("9"));
    assertEquals("order-7", d.deserialize("t", h, b("order-7#3")));
    assertEquals("order-7", d.deserialize("t", new RecordHeaders(), b("order-7")));
    assertEquals("acct", d.deserialize("t", new RecordHeaders(), b("acct#7"))); // by suffix
    assertEquals(null, d.deserialize("t", h, (byte[]) null));
    d.close();
    LogicalKeyDeserializer<String> only = new LogicalKeyDeserializer<>(new StringDeserializer());
    c.put(LogicalKeyDeserializer.RECOVERY_CONFIG, "headers_only");
    c.put(LogicalKeyDeserializer.SEPARATOR_CONFIG, "~");
    only.configure(c, true);
    assertEquals("acct#7", only.deserialize("t", new RecordHeaders(), b("acct#7")));
    RecordHeaders tilde = new RecordHeaders();
    tilde.add(MergeContract.SALT_HEADER, b("12"));
    assertEquals("order-7", only.deserialize("t", tilde, b("order-7~12")));
    ConfigException e = assertThrows(ConfigException.class,
        () -> new LogicalKeyDeserializer<String>().configure(Map.of(), true));
    assertTrue(e.getMessage().contains(LogicalKeyDeserializer.INNER_CONFIG), e.getMessage());
    assertThrows(ConfigException.class, () -> new LogicalKeyDeserializer<>(
        new StringDeserializer()).configure(Map.of(LogicalKeyDeserializer.SEPARATOR_CONFIG,
            "#1"), true));
    assertThrows(ConfigException.class, () -> new LogicalKeyDeserializer<>(
        new StringDeserializer()).configure(Map.of(LogicalKeyDeserializer.RECOVERY_CONFIG,
            "suffix"), true));
  }
}
