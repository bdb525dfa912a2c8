package dev.hotkey.kafka;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import org.junit.jupiter.api.Test;

/** docs/CLIENT-JAVA.md lists every property of HotkeyConfig.PROPERTIES, as generated. */
class DocsTest {
  static String table() {
    StringBuilder sb = new StringBuilder("| property | default | range / values | meaning |\n"
        + "|---|---|---|---|\n");
    for (String[] p : HotkeyConfig.PROPERTIES) {
      sb.append("| `").append(p[0]).append("` | ").append(p[1]).append(" | ").append(p[2])
          .append(" | ").append(p[3]).append(" |\n");
    }
    return sb.toString().replace("|  |", "| |");
  }

  @Test
  void clientJavaDocListsEveryProperty() throws Exception {
    String doc = Files.readString(TestData.root().resolve("docs/CLIENT-JAVA.md"),
        StandardCharsets.UTF_8);
    String table = table();
    assertTrue(doc.contains(table), "docs/CLIENT-JAVA.md must contain the generated table:\n"
        + table);
  }
}
