package dev.hotkey.kafka.internals;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The lines the client logged through SLF4J: the tests run with slf4j-simple writing to
 * target/test-client.log (pom.xml, surefire's system properties), one file for the test JVM.
 */
public final class TestLog {
  private TestLog() {}

  static Path file() {
    String f = System.getProperty("org.slf4j.simpleLogger.logFile");
    if (f == null || f.equals("System.err") || f.equals("System.out")) {
      throw new IllegalStateException("slf4j-simple does not log to a file here");
    }
    return Path.of(f);
  }

  /** Every line of client {@code clientId} ({@code [hotkey clientId=...]}) containing text. */
  public static List<String> lines(String clientId, String text) throws IOException {
    List<String> out = new ArrayList<>();
    Path f = file();
    if (!Files.exists(f)) {
      return out;
    }
    String marker = "[hotkey clientId=" + clientId + " ";
    for (String line : Files.readAllLines(f, StandardCharsets.UTF_8)) {
      if (line.contains(marker) && line.contains(text)) {
        out.add(line);
      }
    }
    return out;
  }
}
