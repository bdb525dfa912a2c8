package dev.hotkey.kafka.internals;

import java.io.InputStream;
import java.util.Properties;
import org.apache.kafka.clients.producer.Partitioner;

/**
 * The kafka-clients versions this client supports: the lines it is tested with (client/java
 * pom.xml profiles kafka-3.0, kafka-3.9, kafka-4.0, kafka-4.4 run the version-sensitive tests
 * on each line's ends; the build itself uses 4.1.1). Confluent's builds ({@code 7.6.0-ccs}) are
 * Apache Kafka's of the same minor line (7.x = 3.x, 8.x = 4.x).
 */
public final class KafkaVersions {
  private KafkaVersions() {}

  /** Per supported major line: the major, the oldest and the newest minor tested. */
  static final int[][] LINES = {{3, 0, 9}, {4, 0, 4}};

  /** The supported lines as text: {@code 3.0-3.9, 4.0-4.4}. */
  public static String supported() {
    StringBuilder sb = new StringBuilder();
    for (int[] l : LINES) {
      sb.append(sb.length() > 0 ? ", " : "").append(l[0]).append('.').append(l[1]).append('-')
          .append(l[0]).append('.').append(l[2]);
    }
    return sb.toString();
  }

  private static final String RUNNING = readRunning();

  /**
   * The kafka-clients version on the classpath: its jar's kafka/kafka-version.properties, which
   * Kafka's own AppInfoParser reads (that class moved in 4.4, the file did not); "unknown" when
   * it is not there (a repackaged jar).
   */
  public static String running() {
    return RUNNING;
  }

  private static String readRunning() {
    try (InputStream in = Partitioner.class.getResourceAsStream("/kafka/kafka-version.properties")) {
      if (in == null) {
        return "unknown";
      }
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("version", "unknown").trim();
    } catch (Exception e) {
      return "unknown";
    }
  }

  /** {major, minor} of an Apache or Confluent (-ccs) version, or null when unreadable. */
  static int[] parse(String version) {
    if (version == null) {
      return null;
    }
    String[] parts = version.trim().split("[.-]");
    if (parts.length < 2) {
      return null;
    }
    try {
      int major = Integer.parseInt(parts[0]);
      int minor = Integer.parseInt(parts[1]);
      if (version.contains("-ccs") && major >= 7) {
        major -= 4; // Confluent Platform 7.x ships Apache Kafka 3.x, 8.x ships 4.x
      }
      return new int[] {major, minor};
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /**
   * Null when {@code version} is in a supported line (or unreadable: nothing to judge);
   * otherwise why it is not.
   */
  public static String outsideRange(String version) {
    int[] v = parse(version);
    if (v == null) {
      return null;
    }
    for (int[] l : LINES) {
      if (v[0] == l[0] && v[1] >= l[1] && v[1] <= l[2]) {
        return null;
      }
    }
    boolean older = v[0] < LINES[0][0];
    return "kafka-clients " + version + " is " + (older ? "older than" : "outside")
        + " the versions this hotkey client supports and is tested with (" + supported() + ")"
        + (older ? "; before 3.0 it is not supported" : "; it may work, but nothing here"
            + " checked that its KafkaProducer calls the partitioner and interceptor as these"
            + " versions do");
  }
}
