package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyConfig;
import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.MergeContract;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;

/** The shared vectors (tests/data/vectors, written by the C++ code) and small readers. */
public final class TestData {
  private TestData() {}

  public static Path root() {
    return Path.of(System.getProperty("hotkey.root", "../..")).toAbsolutePath().normalize();
  }

  public static Map<?, ?> vectors(String name) throws IOException, Json.SyntaxError {
    String text = Files.readString(root().resolve("tests/data/vectors").resolve(name),
        StandardCharsets.UTF_8);
    return (Map<?, ?>) Json.parse(text);
  }

  public static byte[] hex(Object text) {
    String s = (String) text;
    byte[] out = new byte[s.length() / 2];
    for (int i = 0; i < out.length; i++) {
      out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    }
    return out;
  }

  static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (byte x : b) {
      sb.append(String.format("%02x", x & 0xff));
    }
    return sb.toString();
  }

  public static long num(Object n) {
    return ((Json.Num) n).integer.longValue();
  }

  static double dbl(Object n) {
    return ((Json.Num) n).value;
  }

  public static List<?> list(Object o) {
    return (List<?>) o;
  }

  public static Map<?, ?> map(Object o) {
    return (Map<?, ?>) o;
  }

  /** Whether {@code f} held within {@code seconds} (asked every 10 ms). */
  static boolean eventually(long seconds, BooleanSupplier f) throws InterruptedException {
    long deadline = System.nanoTime() + seconds * 1_000_000_000L;
    while (System.nanoTime() < deadline) {
      if (f.getAsBoolean()) {
        return true;
      }
      Thread.sleep(10);
    }
    return false;
  }
}
