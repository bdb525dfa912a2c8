package dev.hotkey.kafka;

import dev.hotkey.kafka.internals.HotKeyList;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigException;

/**
 * The {@code hotkey.*} properties a producer's configuration takes (docs/CLIENT-JAVA.md, as
 * Kafka's {@code ProducerConfig} holds the producer's): one table of names, types, defaults,
 * ranges and meanings. It is Kafka's own {@link ConfigDef}, so the table is the parser (types
 * and range checks; a bad value is a {@link ConfigException} naming the property), and it
 * generates the property table of docs/CLIENT-JAVA.md ({@link #markdownTable()}, held to the page
 * by a test). Properties are set like Kafka's:
 *
 * <pre>{@code
 * props.put(HotkeyConfig.COORDINATOR_URL_CONFIG, "http://coordinator:8470");
 * }</pre>
 */
public final class HotkeyConfig {
  private HotkeyConfig() {}

  /** Every property of this client starts with it; other names are Kafka's. */
  public static final String PREFIX = "hotkey.";
  /** {@code hotkey.kafka.<name>}: sets {@code <name>} on the kafka transport's clients. */
  public static final String KAFKA_PREFIX = "hotkey.kafka.";

  public static final String COORDINATOR_URL_CONFIG = "hotkey.coordinator.url";
  public static final String PRODUCER_ID_CONFIG = "hotkey.producer.id";
  public static final String TOKEN_CONFIG = "hotkey.token";
  public static final String SSL_CA_LOCATION_CONFIG = "hotkey.coordinator.ssl.ca.location";
  public static final String REPORT_INTERVAL_MS_CONFIG = "hotkey.report.interval.ms";
  public static final String SAMPLE_RATE_CONFIG = "hotkey.sample.rate";
  public static final String SKETCH_CAPACITY_CONFIG = "hotkey.sketch.capacity";
  public static final String ROUTING_MODE_CONFIG = "hotkey.routing.mode";
  public static final String SALT_POLICY_CONFIG = "hotkey.salt.policy";
  public static final String LIST_TTL_MS_CONFIG = "hotkey.list.ttl.ms";
  public static final String LIST_STALE_MS_CONFIG = "hotkey.list.stale.ms";
  public static final String LIST_EXPIRED_POLICY_CONFIG = "hotkey.list.expired.policy";
  public static final String HASH_CONFIG = "hotkey.hash";
  public static final String POLL_WAIT_MS_CONFIG = "hotkey.poll.wait.ms";
  public static final String HTTP_TIMEOUT_MS_CONFIG = "hotkey.http.timeout.ms";
  public static final String BACKOFF_INITIAL_MS_CONFIG = "hotkey.backoff.initial.ms";
  public static final String BACKOFF_MAX_MS_CONFIG = "hotkey.backoff.max.ms";
  public static final String SALT_HEADERS_CONFIG = "hotkey.salt.headers";
  public static final String MERGE_CONTRACT_CONFIG = "hotkey.merge.contract";
  public static final String SURGE_INTERVAL_MS_CONFIG = "hotkey.surge.interval.ms";
  public static final String SURGE_FACTOR_CONFIG = "hotkey.surge.factor";
  public static final String REPORT_QUEUE_MAX_CONFIG = "hotkey.report.queue.max";
  public static final String REPORT_FORMAT_CONFIG = "hotkey.report.format";
  public static final String TOPICS_CONFIG = "hotkey.topics";
  public static final String STARTUP_WAIT_MS_CONFIG = "hotkey.startup.wait.ms";
  public static final String TRANSPORT_CONFIG = "hotkey.transport";
  public static final String REPORTS_TOPIC_CONFIG = "hotkey.reports.topic";
  public static final String LISTS_TOPIC_CONFIG = "hotkey.lists.topic";
  public static final String CLIENTS_VERSION_CHECK_CONFIG = "hotkey.clients.version.check";

  /** The C++ client's mutual-TLS properties: refused by name, with the reason (not supported). */
  public static final List<String> UNSUPPORTED = List.of(
      "hotkey.coordinator.ssl.certificate.location", "hotkey.coordinator.ssl.key.location");

  /** One row: Kafka's definition, plus how the docs show its default. */
  private static final class Row {
    final String name;
    final Type type;
    final Object defaultValue;
    final String shownDefault;
    final ConfigDef.Validator validator;
    final Importance importance;
    final String doc;

    Row(String name, Type type, Object defaultValue, String shownDefault,
        ConfigDef.Validator validator, Importance importance, String doc) {
      this.name = name;
      this.type = type;
      this.defaultValue = defaultValue;
      this.shownDefault = shownDefault != null ? shownDefault : shown(defaultValue, type);
      this.validator = validator;
      this.importance = importance;
      this.doc = doc;
    }

    private static String shown(Object v, Type type) {
      String s = v instanceof List ? String.join(",", strings((List<?>) v)) : String.valueOf(v);
      if (s.isEmpty()) {
        return "empty";
      }
      return type == Type.INT || type == Type.LONG || type == Type.DOUBLE ? s : "`" + s + "`";
    }
  }

  private static List<String> strings(List<?> l) {
    List<String> out = new ArrayList<>();
    for (Object o : l) {
      out.add(String.valueOf(o));
    }
    return out;
  }

  // The table. Order is the docs' order.
  private static final List<Row> ROWS = List.of(
      new Row(COORDINATOR_URL_CONFIG, Type.STRING, "", null, Validators.URL, Importance.HIGH,
          "coordinator base URL; empty (and the http transport): no reports, no lists, plain"
              + " routing"),
      new Row(PRODUCER_ID_CONFIG, Type.STRING, "", "`<hostname>-<pid>-<client.id>`",
          Validators.PRODUCER_ID, Importance.MEDIUM, "stable producer id in reports; the"
              + " default names the producer's `client.id` (Kafka's `producer-N` when unset),"
              + " with `-2`, `-3`, ... appended when live producers of the JVM share one"),
      new Row(TOKEN_CONFIG, Type.PASSWORD, "", null, null, Importance.MEDIUM,
          "`Authorization: Bearer` token for reports and list reads"),
      new Row(SSL_CA_LOCATION_CONFIG, Type.STRING, "", "empty (the JVM's trust store)",
          Validators.shown("readable PEM file"), Importance.MEDIUM,
          "CA certificate(s) that vouch for an `https://` coordinator"),
      new Row(REPORT_INTERVAL_MS_CONFIG, Type.INT, 500, null, Validators.range(10, 3600000),
          Importance.LOW, "report window length"),
      new Row(SAMPLE_RATE_CONFIG, Type.STRING, "auto", null, Validators.SAMPLE_RATE,
          Importance.LOW, "`auto`: each window samples at the rate its sketch needs (about"
              + " capacity^2/4 records); a number: one keyed record in round(1/rate) feeds the"
              + " sketch"),
      new Row(SKETCH_CAPACITY_CONFIG, Type.INT, 256, null, Validators.range(1, 65536),
          Importance.LOW, "Space-Saving capacity per topic"),
      new Row(ROUTING_MODE_CONFIG, Type.STRING, "rekey", null,
          Validators.oneOf("rekey", "route"), Importance.HIGH,
          "rekey: the interceptor writes `key<sep><salt>`, marked by the merge contract"
              + " (`hotkey.merge.contract`); route: the partitioner sends the record, key"
              + " unchanged and without headers, to the salt's partition"),
      new Row(SALT_POLICY_CONFIG, Type.STRING, "wrr", null,
          Validators.oneOf("wrr", "value_hash", "random"), Importance.LOW,
          "which salt a hot record takes"),
      new Row(LIST_TTL_MS_CONFIG, Type.LONG, 600000L, null,
          Validators.range(0, 0xffffffffL, "0-2^32-1 (0: never)"), Importance.MEDIUM,
          "silence after which the expired policy applies"),
      new Row(LIST_STALE_MS_CONFIG, Type.INT, 3000, null,
          Validators.range(0, 3600000, "0-3600000 (0: off)"), Importance.MEDIUM,
          "a topic's list is stale after this long without contact with its list source (or at"
              + " once when the source says the topic's owner is gone); while it is, keys the"
              + " producer's own sampler sees at the hot threshold (`hotkey.surge.factor`) are"
              + " salted with local tables (see \"Local tables\")"),
      new Row(LIST_EXPIRED_POLICY_CONFIG, Type.STRING, "keep", null,
          Validators.oneOf("keep", "plain"), Importance.MEDIUM, "routing after the TTL"),
      new Row(HASH_CONFIG, Type.STRING, "murmur2", null, Validators.HASH, Importance.LOW,
          "the producer's family: the Java client partitions keyed records by murmur2 only"),
      new Row(POLL_WAIT_MS_CONFIG, Type.INT, 30000, null, Validators.range(0, 300000),
          Importance.LOW, "long-poll wait per list request"),
      new Row(HTTP_TIMEOUT_MS_CONFIG, Type.INT, 5000, null, Validators.range(10, 600000),
          Importance.LOW, "connect/request timeout (list reads add the poll wait)"),
      new Row(BACKOFF_INITIAL_MS_CONFIG, Type.INT, 100, null, Validators.range(1, 600000),
          Importance.LOW, "first retry delay after a failure"),
      new Row(BACKOFF_MAX_MS_CONFIG, Type.INT, 10000, null,
          Validators.range(1, 3600000, "1-3600000, >= initial"), Importance.LOW,
          "retry delay cap (delays double, jittered in [d/2, d])"),
      new Row(SALT_HEADERS_CONFIG, Type.BOOLEAN, true, null, Validators.shown("`true`, `false`"),
          Importance.LOW,
          "rekey mode: add the merge contract's headers (`hotkey.merge.contract`); `false`"
              + " leaves every one off"),
      new Row(MERGE_CONTRACT_CONFIG, Type.INT, MergeContract.VERSION, null, Validators.range(1, 2), Importance.LOW,
          "rekey mode: the merge contract version written (docs/CLIENT.md \"Merge contract\"):"
              + " `2` marks a rekeyed record by its key's suffix alone and an unsalted record"
              + " whose key ends in `<separator><digits>` with `hotkey.unsalted`; `1` puts"
              + " `hotkey.salt` / `hotkey.version` on every salted record"),
      new Row(SURGE_INTERVAL_MS_CONFIG, Type.INT, 100, null,
          Validators.range(0, 3600000, "0-3600000 (0: off)"), Importance.LOW,
          "at most one early (surge) report per topic per this interval"),
      new Row(SURGE_FACTOR_CONFIG, Type.DOUBLE, 1.0, null, Validators.range(0.01, 1000),
          Importance.LOW, "an unsalted key reaching this many fair shares (`1 / partitions`) of"
              + " the window's sampled records is a surge: its topic's report goes at once"),
      new Row(REPORT_QUEUE_MAX_CONFIG, Type.INT, 4, null, Validators.range(1, 1024),
          Importance.LOW, "reports waiting per topic while the coordinator fails; beyond, the"
              + " oldest is dropped"),
      new Row(REPORT_FORMAT_CONFIG, Type.STRING, "binary", null,
          Validators.oneOf("binary", "json"), Importance.LOW, "report encoding"),
      new Row(TOPICS_CONFIG, Type.LIST, Collections.emptyList(), null, Validators.TOPIC_LIST,
          Importance.LOW, "subscribe before the first record"),
      new Row(STARTUP_WAIT_MS_CONFIG, Type.INT, 0, null, Validators.range(0, 600000),
          Importance.LOW,
          "the producer's creation waits up to this long for the lists of `hotkey.topics`"),
      new Row(TRANSPORT_CONFIG, Type.STRING, "http", null, Validators.oneOf("http", "kafka"),
          Importance.HIGH,
          "how reports and lists travel; with `kafka`, `hotkey.coordinator.url` is not needed"),
      new Row(REPORTS_TOPIC_CONFIG, Type.STRING, "__hotkey_reports", null, Validators.TOPIC,
          Importance.LOW, "kafka transport: where reports are produced"),
      new Row(LISTS_TOPIC_CONFIG, Type.STRING, "__hotkey_lists", null, Validators.TOPIC,
          Importance.LOW, "kafka transport: where lists are read"),
      new Row(CLIENTS_VERSION_CHECK_CONFIG, Type.STRING, "strict", null,
          Validators.oneOf("strict", "warn"), Importance.LOW, "a kafka-clients version outside"
              + " the tested lines (3.0-3.9, 4.0-4.4; Confluent's 7.x and 8.x builds of them):"
              + " `strict` refuses the producer's configuration, `warn` logs it once and runs"));

  // The hotkey.kafka.<name> prefix: a row of the docs, not a property of the ConfigDef.
  private static final String KAFKA_PREFIX_ROW = "| `hotkey.kafka.<name>` | | any Kafka client"
      + " property | kafka transport: sets `<name>` on its producer and consumer, over the"
      + " connection settings it inherits; refused with the `http` transport |\n";

  private static final ConfigDef CONFIG = build();

  private static ConfigDef build() {
    ConfigDef def = new ConfigDef();
    for (Row r : ROWS) {
      def.define(r.name, r.type, r.defaultValue, r.validator, r.importance, r.doc);
    }
    return def;
  }

  /** A copy of the table as Kafka's {@link ConfigDef} (for tools that list or check configs). */
  public static ConfigDef configDef() {
    return new ConfigDef(CONFIG);
  }

  /** The names of the table, in its order. */
  public static List<String> names() {
    List<String> out = new ArrayList<>();
    for (Row r : ROWS) {
      out.add(r.name);
    }
    return out;
  }

  /**
   * The property table of docs/CLIENT-JAVA.md, generated from this table (property, default,
   * range or values, meaning).
   */
  public static String markdownTable() {
    StringBuilder sb = new StringBuilder("| property | default | range / values | meaning |\n"
        + "|---|---|---|---|\n");
    for (Row r : ROWS) {
      String range = r.validator == null ? "" : r.validator.toString();
      String row = "| `" + r.name + "` | " + r.shownDefault + " | " + range + " | " + r.doc
          + " |";
      sb.append(row.replace("|  |", "| |")).append('\n');
    }
    return sb.append(KAFKA_PREFIX_ROW).toString();
  }

  /**
   * Parses and checks the table's properties among {@code hotkeyProps} (values as strings):
   * every value typed, range-checked and defaulted. Other names are ignored here.
   */
  public static java.util.Map<String, Object> parse(java.util.Map<String, String> hotkeyProps) {
    return CONFIG.parse(hotkeyProps);
  }

  /** The table's checks, with the docs' description of what each accepts (toString). */
  static final class Validators {
    private Validators() {}

    static ConfigException bad(String name, Object value, String why) {
      return new ConfigException(name, value, why);
    }

    /** Only documents what is accepted: the check is elsewhere (the file, the type). */
    static ConfigDef.Validator shown(String text) {
      return new ConfigDef.Validator() {
        @Override
        public void ensureValid(String name, Object value) {}

        @Override
        public String toString() {
          return text;
        }
      };
    }

    static ConfigDef.Validator range(long lo, long hi) {
      return range(lo, hi, lo + "-" + hi);
    }

    static ConfigDef.Validator range(long lo, long hi, String text) {
      return new ConfigDef.Validator() {
        @Override
        public void ensureValid(String name, Object value) {
          long v = ((Number) value).longValue();
          if (v < lo || v > hi) {
            throw bad(name, value, "out of range [" + lo + ", " + hi + "]");
          }
        }

        @Override
        public String toString() {
          return text;
        }
      };
    }

    static ConfigDef.Validator range(double lo, double hi) {
      return new ConfigDef.Validator() {
        @Override
        public void ensureValid(String name, Object value) {
          double v = ((Number) value).doubleValue();
          if (!(v >= lo && v <= hi)) {
            throw bad(name, value, "must be in [" + lo + ", " + (long) hi + "]");
          }
        }

        @Override
        public String toString() {
          return lo + "-" + (long) hi;
        }
      };
    }

    static ConfigDef.Validator oneOf(String... values) {
      return new ConfigDef.Validator() {
        @Override
        public void ensureValid(String name, Object value) {
          for (String v : values) {
            if (v.equals(value)) {
              return;
            }
          }
          throw bad(name, value, "expected " + String.join(", ", values));
        }

        @Override
        public String toString() {
          StringBuilder sb = new StringBuilder();
          for (String v : values) {
            sb.append(sb.length() > 0 ? ", " : "").append('`').append(v).append('`');
          }
          return sb.toString();
        }
      };
    }

    static final ConfigDef.Validator URL = new ConfigDef.Validator() {
      @Override
      public void ensureValid(String name, Object value) {
        String v = (String) value;
        if (!v.isEmpty() && !v.startsWith("http://") && !v.startsWith("https://")) {
          throw bad(name, value, "expected http://HOST:PORT or https://HOST:PORT");
        }
      }

      @Override
      public String toString() {
        return "`http://HOST:PORT`, `https://…`";
      }
    };

    static final ConfigDef.Validator PRODUCER_ID = new ConfigDef.Validator() {
      @Override
      public void ensureValid(String name, Object value) {
        String v = (String) value;
        if (v.isEmpty()) {
          return; // the default: <hostname>-<pid>
        }
        if (v.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 256) {
          throw bad(name, value, "must be 1..256 bytes");
        }
        for (int i = 0; i < v.length(); i++) {
          if (v.charAt(i) < 0x20 || v.charAt(i) == 0x7f) {
            throw bad(name, value, "must not contain control characters");
          }
        }
      }

      @Override
      public String toString() {
        return "1-256 bytes";
      }
    };

    static final ConfigDef.Validator SAMPLE_RATE = new ConfigDef.Validator() {
      @Override
      public void ensureValid(String name, Object value) {
        String v = (String) value;
        if (v.equals("auto")) {
          return;
        }
        double r;
        try {
          r = Double.parseDouble(v);
        } catch (NumberFormatException e) {
          throw bad(name, value, "expected auto or a number");
        }
        String last = v.isEmpty() ? "" : v.substring(v.length() - 1).toLowerCase(Locale.ROOT);
        if (last.equals("d") || last.equals("f")) {
          throw bad(name, value, "expected auto or a number");
        }
        if (!(r >= 1e-6 && r <= 1.0)) {
          throw bad(name, value, "must be in [1e-06, 1]");
        }
      }

      @Override
      public String toString() {
        return "`auto`, [1e-6, 1]";
      }
    };

    static final ConfigDef.Validator HASH = new ConfigDef.Validator() {
      @Override
      public void ensureValid(String name, Object value) {
        String v = (String) value;
        if (v.equals("murmur2")) {
          return;
        }
        if (v.equals("crc32") || v.equals("fnv1a")) {
          throw bad(name, value, "the Java producer partitions keyed records by murmur2 (its"
              + " built-in partitioner's family); hotkey.hash must be murmur2 or unset");
        }
        throw bad(name, value, "expected murmur2, crc32 or fnv1a");
      }

      @Override
      public String toString() {
        return "`murmur2`";
      }
    };


    static final ConfigDef.Validator TOPIC = new ConfigDef.Validator() {
      @Override
      public void ensureValid(String name, Object value) {
        if (!HotKeyList.validTopicName((String) value)) {
          throw bad(name, value, "invalid topic name");
        }
      }

      @Override
      public String toString() {
        return "topic name";
      }
    };

    static final ConfigDef.Validator TOPIC_LIST = new ConfigDef.Validator() {
      @Override
      public void ensureValid(String name, Object value) {
        for (Object o : (List<?>) value) {
          String t = String.valueOf(o).trim();
          if (!t.isEmpty() && !HotKeyList.validTopicName(t)) {
            throw bad(name, value, "invalid topic name \"" + t + "\"");
          }
        }
      }

      @Override
      public String toString() {
        return "comma-separated topic names";
      }
    };
  }
}
