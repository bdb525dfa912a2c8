package dev.hotkey.kafka.internals;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hotkey.kafka.MergeContract;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Local tables (docs/CLIENT.md, "Local tables"): what the last list tells them (its never_salt
 * prefixes), the mark of their versions (2^63 + V) and lists at that mark refused.
 */
class LocalTablesTest {
  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String withNeverSalt(String prefixes) throws Exception {
    String json = Lists.listJson("orders", 4, 12, "listed", 1);
    return json.replace(",\"updated_at_ms\"",
        ",\"never_salt\":[" + prefixes + "],\"updated_at_ms\"");
  }

  @Test
  void neverSaltPrefixesAreReadAndCheckedLikeCpp() throws Exception {
    HotKeyList l = HotKeyList.parse(withNeverSalt("{\"key\":\"account:\"},{\"key_b64\":\"AP8=\"}"));
    assertEquals(2, l.neverSalt.size());
    assertArrayEquals(b("account:"), l.neverSalt.get(0));
    assertArrayEquals(new byte[] {0, (byte) 0xff}, l.neverSalt.get(1));
    assertTrue(HotKeyList.parse(Lists.listJson("orders", 4, 12, "listed", 1)).neverSalt.isEmpty());
    // The refusals of common/src/hotkey_list.cc, word for word.
    DecodeException empty = assertThrows(DecodeException.class,
        () -> HotKeyList.parse(withNeverSalt("{\"key\":\"a\"},{\"key\":\"\"}")));
    assertEquals("never_salt[1].key: must not be empty", empty.getMessage());
    DecodeException dup = assertThrows(DecodeException.class,
        () -> HotKeyList.parse(withNeverSalt("{\"key\":\"a\"},{\"key\":\"b\"},{\"key\":\"a\"}")));
    assertEquals("never_salt[2].key: duplicate of never_salt[0]", dup.getMessage());
    DecodeException notObject = assertThrows(DecodeException.class,
        () -> HotKeyList.parse(withNeverSalt("\"a\"")));
    assertEquals("never_salt[0]: must be an object", notObject.getMessage());
  }

  @Test
  void theMarkIsTwoToTheSixtyThreePlusTheListVersion() {
    long v = MergeContract.LOCAL_TABLE_VERSION_BIT | 4;
    assertEquals("9223372036854775812", Long.toUnsignedString(v));
    assertTrue(MergeContract.isLocalTableVersion(v));
    assertEquals(4, MergeContract.listVersionOf(v));
    assertFalse(MergeContract.isLocalTableVersion((3L << 32) | 1));
    assertEquals((3L << 32) | 1, MergeContract.listVersionOf((3L << 32) | 1));
  }

  @Test
  void listsAtTheLocalMarkAreRefused() throws Exception {
    TopicRouter r = new TopicRouter("orders", new Sampler(16, false, 1.0, 0));
    assertTrue(r.publish(Lists.list("orders", 4, 12, "listed", 1)));
    // Valid lists (the decoder takes any u64), which no coordinator issues: never routed with.
    HotKeyList mark = Lists.list("orders", Long.MIN_VALUE, 12, "listed", 1);
    HotKeyList top = Lists.list("orders", -1L, 12, "listed", 1);
    assertFalse(r.publish(mark));
    assertFalse(r.publish(top));
    assertEquals(4, r.version());
    assertEquals("version 9223372036854775808 is at or above 2^63, the range that marks a"
        + " producer's local table (no coordinator issues it)", HotkeyClient.refusal(r, mark));
    assertTrue(r.publish(Lists.list("orders", Long.MAX_VALUE, 12, "listed", 1)));
  }
}
