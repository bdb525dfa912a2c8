package dev.hotkey.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.hotkey.kafka.internals.Settings;
import dev.hotkey.kafka.internals.TestData;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.junit.jupiter.api.Test;

/**
 * docs/CLIENT-JAVA.md holds the property table HotkeyConfig generates, between the
 * "<!-- BEGIN GENERATED: properties ... -->" and "<!-- END GENERATED: properties -->" markers (as
 * the C++ settings tables and tests/settings/settings_docs_test.cc). HOTKEY_UPDATE_DOCS=1
 * rewrites the block in place instead.
 */
class DocsTest {
  static final String BEGIN = "<!-- BEGIN GENERATED: properties (HotkeyConfig.markdownTable()) -->\n";
  static final String END = "<!-- END GENERATED: properties -->\n";

  @Test
  void clientJavaDocHoldsTheGeneratedPropertyTable() throws Exception {
    Path page = TestData.root().resolve("docs/CLIENT-JAVA.md");
    String text = Files.readString(page, StandardCharsets.UTF_8);
    String want = BEGIN + HotkeyConfig.markdownTable() + END;
    int b = text.indexOf(BEGIN);
    int e = text.indexOf(END);
    if (b < 0 || e < b) {
      fail("docs/CLIENT-JAVA.md has no GENERATED block 'properties'; add it where the table"
          + " belongs:\n" + want);
    }
    String have = text.substring(b, e + END.length());
    if (have.equals(want)) {
      return;
    }
    String update = System.getenv("HOTKEY_UPDATE_DOCS");
    if (update != null && !update.isEmpty()) {
      Files.writeString(page, text.substring(0, b) + want + text.substring(e + END.length()),
          StandardCharsets.UTF_8);
      return;
    }
    String[] h = have.split("\n", -1);
    String[] w = want.split("\n", -1);
    for (int i = 0; i < Math.max(h.length, w.length); i++) {
      String hl = i < h.length ? h[i] : "<end>";
      String wl = i < w.length ? w[i] : "<end>";
      if (!hl.equals(wl)) {
        fail("docs/CLIENT-JAVA.md's property table differs from HotkeyConfig at its line " + (i + 1)
            + ":\n  page:  " + hl + "\n  table: " + wl + "\nChange the table in HotkeyConfig (not"
            + " the page), then regenerate the page: HOTKEY_UPDATE_DOCS=1 mvn -q -B test"
            + " -Dtest=DocsTest (in client/java)");
      }
    }
  }

  /** Every default of the table is what the parser takes when the property is unset. */
  @Test
  void theTableIsTheParser() {
    ConfigDef def = HotkeyConfig.configDef();
    Map<String, Object> parsed = HotkeyConfig.parse(Map.of());
    for (String name : HotkeyConfig.names()) {
      assertTrue(def.configKeys().containsKey(name), name);
      assertEquals(def.configKeys().get(name).defaultValue, parsed.get(name), name);
    }
    Settings s = Settings.parse(Map.of());
    assertEquals(500, s.reportIntervalMs);
    assertEquals(256, s.sketchCapacity);
    assertEquals(600000L, s.listTtlMs);
    assertEquals(1.0, s.surgeFactor);
    assertTrue(s.saltHeaders);
    assertEquals("__hotkey_lists", s.listsTopic);
  }
}
