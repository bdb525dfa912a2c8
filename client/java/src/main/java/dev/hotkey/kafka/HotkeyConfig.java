package dev.hotkey.kafka;

import java.io.File;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigException;

/**
 * The hotkey.* properties of docs/CLIENT.md (client/src/config.cc), parsed from a producer's
 * configuration. A bad value or an unknown hotkey.* name is a ConfigException naming the
 * property, thrown while the producer is being created.
 */
public final class HotkeyConfig {
  public enum Transport { HTTP, KAFKA }

  public enum RoutingMode { REKEY, ROUTE }

  public enum SaltPolicy { WRR, VALUE_HASH, RANDOM }

  public enum ExpiredPolicy { KEEP, PLAIN }

  public static final String PREFIX = "hotkey.";
  public static final String KAFKA_PREFIX = "hotkey.kafka.";

  String coordinatorUrl = "";
  String producerId = "";
  String token = "";
  String sslCaLocation = "";
  int reportIntervalMs = 500;
  boolean sampleAuto = true;
  double sampleRate = 1.0;
  int sketchCapacity = 256;
  RoutingMode routingMode = RoutingMode.REKEY;
  SaltPolicy saltPolicy = SaltPolicy.WRR;
  long listTtlMs = 600000;
  ExpiredPolicy expiredPolicy = ExpiredPolicy.KEEP;
  int pollWaitMs = 30000;
  int httpTimeoutMs = 5000;
  int backoffInitialMs = 100;
  int backoffMaxMs = 10000;
  boolean saltHeaders = true;
  int surgeIntervalMs = 100;
  double surgeFactor = 1.0;
  int reportQueueMax = 4;
  boolean reportJson = false;
  List<String> topics = List.of();
  Transport transport = Transport.HTTP;
  String reportsTopic = "__hotkey_reports";
  String listsTopic = "__hotkey_lists";
  int startupWaitMs = 0;
  /** The transport's Kafka settings: inherited connection settings, then hotkey.kafka.* over them. */
  Map<String, Object> kafkaSettings = new LinkedHashMap<>();

  /** Every hotkey.* property with its default, range and meaning (docs/CLIENT-JAVA.md). */
  public static final List<String[]> PROPERTIES = List.of(
      new String[] {"hotkey.coordinator.url", "empty", "`http://HOST:PORT`, `https://…`",
          "coordinator base URL; empty (and the http transport): no reports, no lists, plain routing"},
      new String[] {"hotkey.producer.id", "`<hostname>-<pid>`", "1-256 bytes",
          "stable producer id in reports"},
      new String[] {"hotkey.token", "empty", "",
          "`Authorization: Bearer` token for reports and list reads"},
      new String[] {"hotkey.coordinator.ssl.ca.location", "empty (the JVM's trust store)",
          "readable PEM file", "CA certificate(s) that vouch for an `https://` coordinator"},
      new String[] {"hotkey.report.interval.ms", "500", "10-3600000", "report window length"},
      new String[] {"hotkey.sample.rate", "`auto`", "`auto`, [1e-6, 1]",
          "`auto`: each window samples at the rate its sketch needs (about capacity^2/4 records);"
              + " a number: one keyed record in round(1/rate) feeds the sketch"},
      new String[] {"hotkey.sketch.capacity", "256", "1-65536", "Space-Saving capacity per topic"},
      new String[] {"hotkey.routing.mode", "`rekey`", "`rekey`, `route`",
          "rekey: the interceptor writes `key<sep><salt>` and the merge headers; route: the"
              + " partitioner sends the record, key unchanged and without headers, to the salt's"
              + " partition"},
      new String[] {"hotkey.salt.policy", "`wrr`", "`wrr`, `value_hash`, `random`",
          "which salt a hot record takes"},
      new String[] {"hotkey.list.ttl.ms", "600000", "0-2^32-1 (0: never)",
          "silence after which the expired policy applies"},
      new String[] {"hotkey.list.expired.policy", "`keep`", "`keep`, `plain`",
          "routing after the TTL"},
      new String[] {"hotkey.hash", "`murmur2`", "`murmur2`",
          "the producer's family: the Java client partitions keyed records by murmur2 only"},
      new String[] {"hotkey.poll.wait.ms", "30000", "0-300000", "long-poll wait per list request"},
      new String[] {"hotkey.http.timeout.ms", "5000", "10-600000",
          "connect/request timeout (list reads add the poll wait)"},
      new String[] {"hotkey.backoff.initial.ms", "100", "1-600000",
          "first retry delay after a failure"},
      new String[] {"hotkey.backoff.max.ms", "10000", "1-3600000, >= initial",
          "retry delay cap (delays double, jittered in [d/2, d])"},
      new String[] {"hotkey.salt.headers", "`true`", "`true`, `false`",
          "rekey mode: add the `hotkey.salt` / `hotkey.version` headers to salted records"},
      new String[] {"hotkey.surge.interval.ms", "100", "0-3600000 (0: off)",
          "at most one early (surge) report per topic per this interval"},
      new String[] {"hotkey.surge.factor", "1.0", "0.01-1000",
          "an unsalted key reaching this many fair shares (`1 / partitions`) of the window's"
              + " sampled records is a surge: its topic's report goes at once"},
      new String[] {"hotkey.report.queue.max", "4", "1-1024",
          "reports waiting per topic while the coordinator fails; beyond, the oldest is dropped"},
      new String[] {"hotkey.report.format", "`binary`", "`binary`, `json`", "report encoding"},
      new String[] {"hotkey.topics", "empty", "comma-separated topic names",
          "subscribe before the first record"},
      new String[] {"hotkey.startup.wait.ms", "0", "0-600000",
          "the producer's creation waits up to this long for the lists of `hotkey.topics`"},
      new String[] {"hotkey.transport", "`http`", "`http`, `kafka`",
          "how reports and lists travel; with `kafka`, `hotkey.coordinator.url` is not needed"},
      new String[] {"hotkey.reports.topic", "`__hotkey_reports`", "topic name",
          "kafka transport: where reports are produced"},
      new String[] {"hotkey.lists.topic", "`__hotkey_lists`", "topic name",
          "kafka transport: where lists are read"},
      new String[] {"hotkey.kafka.<name>", "", "any Kafka client property",
          "kafka transport: sets `<name>` on its producer and consumer, over the connection"
              + " settings it inherits; refused with the `http` transport"});

  private static ConfigException bad(String name, Object value, String why) {
    return new ConfigException(name, value, why);
  }

  private static int u32(String name, String value, long lo, long hi) {
    long v;
    try {
      if (value.isEmpty() || value.charAt(0) == '+' || value.charAt(0) == '-') {
        throw new NumberFormatException();
      }
      v = Long.parseLong(value);
    } catch (NumberFormatException e) {
      throw bad(name, value, "expected a non-negative integer");
    }
    if (v < lo || v > hi) {
      throw bad(name, value, "out of range [" + lo + ", " + hi + "]");
    }
    return (int) v;
  }

  private static double number(String name, String value, String expected) {
    try {
      double d = Double.parseDouble(value);
      if (value.isEmpty() || Character.isWhitespace(value.charAt(0))
          || Character.isWhitespace(value.charAt(value.length() - 1)) || value.endsWith("d")
          || value.endsWith("f") || value.endsWith("D") || value.endsWith("F")) {
        throw new NumberFormatException();
      }
      return d;
    } catch (NumberFormatException e) {
      throw bad(name, value, expected);
    }
  }

  private static String choice(String name, String value, String... allowed) {
    for (String a : allowed) {
      if (a.equals(value)) {
        return a;
      }
    }
    throw bad(name, value, "expected " + String.join(", ", allowed));
  }

  /** Names of the application's settings the kafka transport shares: where and how to connect. */
  static boolean connectionSetting(String name) {
    return name.equals("bootstrap.servers") || name.equals("security.protocol")
        || name.startsWith("ssl.") || name.startsWith("sasl.") || name.equals("client.dns.lookup")
        || name.equals("client.rack");
  }

  /** Parses the hotkey.* entries of a producer configuration (other names are Kafka's). */
  public static HotkeyConfig parse(Map<String, ?> props) {
    HotkeyConfig c = new HotkeyConfig();
    Map<String, Object> kafkaOverrides = new LinkedHashMap<>();
    boolean producerIdSet = false;
    for (Map.Entry<String, ?> e : new TreeMap<String, Object>(props).entrySet()) {
      String name = e.getKey();
      if (!name.startsWith(PREFIX)) {
        continue;
      }
      Object raw = e.getValue();
      String value = raw == null ? "" : raw.toString().trim();
      if (raw instanceof List) {
        List<String> parts = new ArrayList<>();
        for (Object o : (List<?>) raw) {
          parts.add(String.valueOf(o));
        }
        value = String.join(",", parts);
      }
      if (name.startsWith(KAFKA_PREFIX)) {
        String setting = name.substring(KAFKA_PREFIX.length());
        if (setting.isEmpty()) {
          throw bad(name, value, "expected hotkey.kafka.<Kafka client property>");
        }
        kafkaOverrides.put(setting, raw);
        continue;
      }
      switch (name) {
        case "hotkey.coordinator.url":
          if (!value.isEmpty() && !value.startsWith("http://") && !value.startsWith("https://")) {
            throw bad(name, value, "expected http://HOST:PORT or https://HOST:PORT");
          }
          while (value.endsWith("/")) {
            value = value.substring(0, value.length() - 1);
          }
          c.coordinatorUrl = value;
          break;
        case "hotkey.producer.id":
          int len = value.getBytes(StandardCharsets.UTF_8).length;
          if (len == 0 || len > 256) {
            throw bad(name, value, "must be 1..256 bytes");
          }
          for (int i = 0; i < value.length(); i++) {
            if (value.charAt(i) < 0x20 || value.charAt(i) == 0x7f) {
              throw bad(name, value, "must not contain control characters");
            }
          }
          c.producerId = value;
          producerIdSet = true;
          break;
        case "hotkey.token":
          c.token = value;
          break;
        case "hotkey.coordinator.ssl.ca.location":
          c.sslCaLocation = value;
          break;
        case "hotkey.coordinator.ssl.certificate.location":
        case "hotkey.coordinator.ssl.key.location":
          throw bad(name, value, "client certificates (mutual TLS) are not supported by the Java"
              + " client yet; use hotkey.token");
        case "hotkey.report.interval.ms":
          c.reportIntervalMs = u32(name, value, 10, 3600000);
          break;
        case "hotkey.sample.rate":
          if (value.equals("auto")) {
            c.sampleAuto = true;
          } else {
            double r = number(name, value, "expected auto or a number");
            if (!(r >= 1e-6 && r <= 1.0)) {
              throw bad(name, value, "must be in [1e-06, 1]");
            }
            c.sampleAuto = false;
            c.sampleRate = r;
          }
          break;
        case "hotkey.sketch.capacity":
          c.sketchCapacity = u32(name, value, 1, 65536);
          break;
        case "hotkey.routing.mode":
          c.routingMode = choice(name, value, "rekey", "route").equals("rekey")
              ? RoutingMode.REKEY : RoutingMode.ROUTE;
          break;
        case "hotkey.salt.policy":
          switch (choice(name, value, "wrr", "value_hash", "random")) {
            case "wrr":
              c.saltPolicy = SaltPolicy.WRR;
              break;
            case "value_hash":
              c.saltPolicy = SaltPolicy.VALUE_HASH;
              break;
            default:
              c.saltPolicy = SaltPolicy.RANDOM;
          }
          break;
        case "hotkey.list.ttl.ms":
          c.listTtlMs = Integer.toUnsignedLong(u32(name, value, 0, 0xffffffffL));
          break;
        case "hotkey.list.expired.policy":
          c.expiredPolicy = choice(name, value, "keep", "plain").equals("keep")
              ? ExpiredPolicy.KEEP : ExpiredPolicy.PLAIN;
          break;
        case "hotkey.hash":
          if (HashFamily.parse(value) == null) {
            throw bad(name, value, "expected murmur2, crc32 or fnv1a");
          }
          if (!value.equals("murmur2")) {
            throw bad(name, value, "the Java producer partitions keyed records by murmur2 (its"
                + " built-in partitioner's family); hotkey.hash must be murmur2 or unset");
          }
          break;
        case "hotkey.poll.wait.ms":
          c.pollWaitMs = u32(name, value, 0, 300000);
          break;
        case "hotkey.http.timeout.ms":
          c.httpTimeoutMs = u32(name, value, 10, 600000);
          break;
        case "hotkey.backoff.initial.ms":
          c.backoffInitialMs = u32(name, value, 1, 600000);
          break;
        case "hotkey.backoff.max.ms":
          c.backoffMaxMs = u32(name, value, 1, 3600000);
          break;
        case "hotkey.salt.headers":
          c.saltHeaders = choice(name, value, "true", "false").equals("true");
          break;
        case "hotkey.surge.interval.ms":
          c.surgeIntervalMs = u32(name, value, 0, 3600000);
          break;
        case "hotkey.surge.factor":
          double f = number(name, value, "expected a number");
          if (!(f >= 0.01 && f <= 1000.0)) {
            throw bad(name, value, "must be in [0.01, 1000]");
          }
          c.surgeFactor = f;
          break;
        case "hotkey.report.queue.max":
          c.reportQueueMax = u32(name, value, 1, 1024);
          break;
        case "hotkey.report.format":
          c.reportJson = choice(name, value, "binary", "json").equals("json");
          break;
        case "hotkey.topics":
          List<String> topics = new ArrayList<>();
          for (String t : value.split(",")) {
            t = t.trim();
            if (t.isEmpty()) {
              continue;
            }
            if (!HotKeyList.validTopicName(t)) {
              throw bad(name, value, "invalid topic name \"" + t + "\"");
            }
            topics.add(t);
          }
          c.topics = Collections.unmodifiableList(topics);
          break;
        case "hotkey.startup.wait.ms":
          c.startupWaitMs = u32(name, value, 0, 600000);
          break;
        case "hotkey.transport":
          c.transport = choice(name, value, "http", "kafka").equals("http")
              ? Transport.HTTP : Transport.KAFKA;
          break;
        case "hotkey.reports.topic":
          if (!HotKeyList.validTopicName(value)) {
            throw bad(name, value, "invalid topic name");
          }
          c.reportsTopic = value;
          break;
        case "hotkey.lists.topic":
          if (!HotKeyList.validTopicName(value)) {
            throw bad(name, value, "invalid topic name");
          }
          c.listsTopic = value;
          break;
        default:
          throw new ConfigException("unknown property " + name
              + " (see docs/CLIENT-JAVA.md for the hotkey.* properties)");
      }
    }
    if (c.backoffMaxMs < c.backoffInitialMs) {
      throw new ConfigException(
          "property hotkey.backoff.max.ms must be >= hotkey.backoff.initial.ms");
    }
    if (!c.sslCaLocation.isEmpty()) {
      if (c.coordinatorUrl.startsWith("http://")) {
        throw new ConfigException(
            "hotkey.coordinator.ssl.* properties need an https:// hotkey.coordinator.url");
      }
      if (!new File(c.sslCaLocation).canRead()) {
        throw bad("hotkey.coordinator.ssl.ca.location", c.sslCaLocation, "cannot read the file");
      }
    }
    if (c.transport == Transport.KAFKA) {
      boolean ownCluster = kafkaOverrides.containsKey("bootstrap.servers");
      if (!ownCluster) {
        for (Map.Entry<String, ?> e : props.entrySet()) {
          if (!e.getKey().startsWith(PREFIX) && connectionSetting(e.getKey())) {
            c.kafkaSettings.put(e.getKey(), e.getValue());
          }
        }
      }
      c.kafkaSettings.putAll(kafkaOverrides);
      Object bootstrap = c.kafkaSettings.get("bootstrap.servers");
      if (bootstrap == null || bootstrap.toString().isEmpty() || bootstrap.toString().equals("[]")) {
        throw new ConfigException("hotkey.transport=kafka needs the cluster: bootstrap.servers"
            + " (the producer's own) or hotkey.kafka.bootstrap.servers");
      }
      if (c.reportJson) {
        throw new ConfigException("hotkey.report.format=json is for the http transport; the"
            + " reports topic carries the binary encoding");
      }
      if (c.reportsTopic.equals(c.listsTopic)) {
        throw new ConfigException("hotkey.reports.topic and hotkey.lists.topic must differ");
      }
    } else if (!kafkaOverrides.isEmpty()) {
      throw new ConfigException("property " + KAFKA_PREFIX + kafkaOverrides.keySet().iterator().next()
          + " needs hotkey.transport=kafka");
    }
    if (!producerIdSet) {
      c.producerId = defaultProducerId();
    }
    return c;
  }

  /** True when this configuration talks to a coordinator (reports and lists). */
  boolean connected() {
    return transport == Transport.KAFKA || !coordinatorUrl.isEmpty();
  }

  static String defaultProducerId() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (Exception e) {
      host = "host";
    }
    if (host == null || host.isEmpty()) {
      host = "host";
    }
    long pid = ProcessHandle.current().pid();
    String id = host + "-" + pid;
    // Several producers in one JVM are several producers to the coordinator.
    int n = INSTANCE.incrementAndGet();
    if (n > 1) {
      id += "-" + n;
    }
    if (id.length() > 256) {
      id = id.substring(id.length() - 256);
    }
    return id;
  }

  private static final java.util.concurrent.atomic.AtomicInteger INSTANCE =
      new java.util.concurrent.atomic.AtomicInteger();

}
