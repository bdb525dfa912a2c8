package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyConfig;
import java.io.File;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;

/**
 * A producer's hotkey.* properties, parsed by the table of {@link HotkeyConfig} (Kafka's
 * ConfigDef: types, defaults, ranges) and checked across properties here. A bad value or an
 * unknown hotkey.* name is a ConfigException naming the property, thrown while the producer is
 * being created. Internal: the fields are what the client's parts read.
 */
public final class Settings {
  public enum Transport { HTTP, KAFKA }

  public enum RoutingMode { REKEY, ROUTE }

  public enum SaltPolicy { WRR, VALUE_HASH, RANDOM }

  public enum ExpiredPolicy { KEEP, PLAIN }

  public String coordinatorUrl;
  /** Empty until the client is created: then hotkey.producer.id, or the default. */
  public String producerId;
  public String token;
  public String sslCaLocation;
  public int reportIntervalMs;
  public boolean sampleAuto;
  public double sampleRate = 1.0;
  public int sketchCapacity;
  public RoutingMode routingMode;
  public SaltPolicy saltPolicy;
  public long listTtlMs;
  /** hotkey.list.stale.ms: 0 turns local tables off (docs/CLIENT.md, "Local tables"). */
  public int listStaleMs;
  public ExpiredPolicy expiredPolicy;
  public int pollWaitMs;
  public int httpTimeoutMs;
  public int backoffInitialMs;
  public int backoffMaxMs;
  public boolean saltHeaders;
  public int mergeContract;
  public int surgeIntervalMs;
  public double surgeFactor;
  public int reportQueueMax;
  public boolean reportJson;
  public List<String> topics;
  public Transport transport;
  public String reportsTopic;
  public String listsTopic;
  public int startupWaitMs;
  /** hotkey.clients.version.check=strict: a kafka-clients outside the tested lines is refused. */
  public boolean versionStrict;
  /** The transport's Kafka settings: inherited connection settings, then hotkey.kafka.* over them. */
  public Map<String, Object> kafkaSettings = new LinkedHashMap<>();

  private static ConfigException bad(String name, Object value, String why) {
    return new ConfigException(name, value, why);
  }

  /** Names of the application's settings the kafka transport shares: where and how to connect. */
  static boolean connectionSetting(String name) {
    return name.equals("bootstrap.servers") || name.equals("security.protocol")
        || name.startsWith("ssl.") || name.startsWith("sasl.") || name.equals("client.dns.lookup")
        || name.equals("client.rack");
  }

  /** A hotkey.* value as the table parses it: text, lists joined by commas. */
  private static String text(Object raw) {
    if (raw == null) {
      return "";
    }
    if (raw instanceof List) {
      List<String> parts = new ArrayList<>();
      for (Object o : (List<?>) raw) {
        parts.add(String.valueOf(o));
      }
      return String.join(",", parts);
    }
    return raw.toString().trim();
  }

  /** Parses the hotkey.* entries of a producer configuration (other names are Kafka's). */
  public static Settings parse(Map<String, ?> props) {
    Map<String, String> own = new TreeMap<>();
    Map<String, Object> kafkaOverrides = new LinkedHashMap<>();
    Set<String> known = new HashSet<>(HotkeyConfig.names());
    for (Map.Entry<String, ?> e : new TreeMap<String, Object>(props).entrySet()) {
      String name = e.getKey();
      if (!name.startsWith(HotkeyConfig.PREFIX)) {
        continue;
      }
      if (name.startsWith(HotkeyConfig.KAFKA_PREFIX)) {
        if (name.length() == HotkeyConfig.KAFKA_PREFIX.length()) {
          throw bad(name, text(e.getValue()), "expected hotkey.kafka.<Kafka client property>");
        }
        kafkaOverrides.put(name.substring(HotkeyConfig.KAFKA_PREFIX.length()), e.getValue());
        continue;
      }
      if (HotkeyConfig.UNSUPPORTED.contains(name)) {
        throw bad(name, text(e.getValue()), "client certificates (mutual TLS) are not supported"
            + " by the Java client yet; use hotkey.token");
      }
      if (!known.contains(name)) {
        throw new ConfigException("unknown property " + name
            + " (see docs/CLIENT-JAVA.md for the hotkey.* properties)");
      }
      own.put(name, text(e.getValue()));
    }
    Map<String, Object> v = HotkeyConfig.parse(own);
    Settings c = new Settings();
    String url = (String) v.get(HotkeyConfig.COORDINATOR_URL_CONFIG);
    while (url.endsWith("/")) {
      url = url.substring(0, url.length() - 1);
    }
    c.coordinatorUrl = url;
    c.producerId = (String) v.get(HotkeyConfig.PRODUCER_ID_CONFIG);
    c.token = ((Password) v.get(HotkeyConfig.TOKEN_CONFIG)).value();
    c.sslCaLocation = (String) v.get(HotkeyConfig.SSL_CA_LOCATION_CONFIG);
    c.reportIntervalMs = (Integer) v.get(HotkeyConfig.REPORT_INTERVAL_MS_CONFIG);
    String rate = (String) v.get(HotkeyConfig.SAMPLE_RATE_CONFIG);
    c.sampleAuto = rate.equals("auto");
    if (!c.sampleAuto) {
      c.sampleRate = Double.parseDouble(rate);
    }
    c.sketchCapacity = (Integer) v.get(HotkeyConfig.SKETCH_CAPACITY_CONFIG);
    c.routingMode = v.get(HotkeyConfig.ROUTING_MODE_CONFIG).equals("rekey")
        ? RoutingMode.REKEY : RoutingMode.ROUTE;
    switch ((String) v.get(HotkeyConfig.SALT_POLICY_CONFIG)) {
      case "wrr":
        c.saltPolicy = SaltPolicy.WRR;
        break;
      case "value_hash":
        c.saltPolicy = SaltPolicy.VALUE_HASH;
        break;
      default:
        c.saltPolicy = SaltPolicy.RANDOM;
    }
    c.listTtlMs = (Long) v.get(HotkeyConfig.LIST_TTL_MS_CONFIG);
    c.listStaleMs = (Integer) v.get(HotkeyConfig.LIST_STALE_MS_CONFIG);
    c.expiredPolicy = v.get(HotkeyConfig.LIST_EXPIRED_POLICY_CONFIG).equals("keep")
        ? ExpiredPolicy.KEEP : ExpiredPolicy.PLAIN;
    c.pollWaitMs = (Integer) v.get(HotkeyConfig.POLL_WAIT_MS_CONFIG);
    c.httpTimeoutMs = (Integer) v.get(HotkeyConfig.HTTP_TIMEOUT_MS_CONFIG);
    c.backoffInitialMs = (Integer) v.get(HotkeyConfig.BACKOFF_INITIAL_MS_CONFIG);
    c.backoffMaxMs = (Integer) v.get(HotkeyConfig.BACKOFF_MAX_MS_CONFIG);
    c.saltHeaders = (Boolean) v.get(HotkeyConfig.SALT_HEADERS_CONFIG);
    c.mergeContract = (Integer) v.get(HotkeyConfig.MERGE_CONTRACT_CONFIG);
    c.surgeIntervalMs = (Integer) v.get(HotkeyConfig.SURGE_INTERVAL_MS_CONFIG);
    c.surgeFactor = (Double) v.get(HotkeyConfig.SURGE_FACTOR_CONFIG);
    c.reportQueueMax = (Integer) v.get(HotkeyConfig.REPORT_QUEUE_MAX_CONFIG);
    c.reportJson = v.get(HotkeyConfig.REPORT_FORMAT_CONFIG).equals("json");
    List<String> topics = new ArrayList<>();
    for (Object t : (List<?>) v.get(HotkeyConfig.TOPICS_CONFIG)) {
      String name = String.valueOf(t).trim();
      if (!name.isEmpty()) {
        topics.add(name);
      }
    }
    c.topics = Collections.unmodifiableList(topics);
    c.startupWaitMs = (Integer) v.get(HotkeyConfig.STARTUP_WAIT_MS_CONFIG);
    c.transport = v.get(HotkeyConfig.TRANSPORT_CONFIG).equals("http")
        ? Transport.HTTP : Transport.KAFKA;
    c.reportsTopic = (String) v.get(HotkeyConfig.REPORTS_TOPIC_CONFIG);
    c.listsTopic = (String) v.get(HotkeyConfig.LISTS_TOPIC_CONFIG);
    c.versionStrict = v.get(HotkeyConfig.CLIENTS_VERSION_CHECK_CONFIG).equals("strict");
    c.check(props, kafkaOverrides);
    return c;
  }

  /** The checks that pair properties (so their order never matters). */
  private void check(Map<String, ?> props, Map<String, Object> kafkaOverrides) {
    if (backoffMaxMs < backoffInitialMs) {
      throw new ConfigException(
          "property hotkey.backoff.max.ms must be >= hotkey.backoff.initial.ms");
    }
    if (!sslCaLocation.isEmpty()) {
      if (coordinatorUrl.startsWith("http://")) {
        throw new ConfigException(
            "hotkey.coordinator.ssl.* properties need an https:// hotkey.coordinator.url");
      }
      if (!new File(sslCaLocation).canRead()) {
        throw bad(HotkeyConfig.SSL_CA_LOCATION_CONFIG, sslCaLocation, "cannot read the file");
      }
    }
    if (transport == Transport.KAFKA) {
      boolean ownCluster = kafkaOverrides.containsKey("bootstrap.servers");
      if (!ownCluster) {
        for (Map.Entry<String, ?> e : props.entrySet()) {
          if (!e.getKey().startsWith(HotkeyConfig.PREFIX) && connectionSetting(e.getKey())) {
            kafkaSettings.put(e.getKey(), e.getValue());
          }
        }
      }
      kafkaSettings.putAll(kafkaOverrides);
      Object bootstrap = kafkaSettings.get("bootstrap.servers");
      if (bootstrap == null || bootstrap.toString().isEmpty() || bootstrap.toString().equals("[]")) {
        throw new ConfigException("hotkey.transport=kafka needs the cluster: bootstrap.servers"
            + " (the producer's own) or hotkey.kafka.bootstrap.servers");
      }
      if (reportJson) {
        throw new ConfigException("hotkey.report.format=json is for the http transport; the"
            + " reports topic carries the binary encoding");
      }
      if (reportsTopic.equals(listsTopic)) {
        throw new ConfigException("hotkey.reports.topic and hotkey.lists.topic must differ");
      }
    } else if (!kafkaOverrides.isEmpty()) {
      throw new ConfigException("property " + HotkeyConfig.KAFKA_PREFIX
          + kafkaOverrides.keySet().iterator().next() + " needs hotkey.transport=kafka");
    }
  }

  /** True when this configuration talks to a coordinator (reports and lists). */
  public boolean connected() {
    return transport == Transport.KAFKA || !coordinatorUrl.isEmpty();
  }

  /** The default hotkey.producer.id: {@code <hostname>-<pid>-<client.id>}, at most 256 bytes. */
  static String defaultProducerId(String clientId) {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (Exception e) {
      host = "host";
    }
    if (host == null || host.isEmpty()) {
      host = "host";
    }
    String id = host + "-" + ProcessHandle.current().pid();
    if (clientId != null && !clientId.isEmpty()) {
      id += "-" + clientId;
    }
    return clip(id);
  }

  /** The last 256 bytes' worth of characters at most (the report's limit), control chars out. */
  static String clip(String id) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < id.length(); i++) {
      char ch = id.charAt(i);
      sb.append(ch < 0x20 || ch == 0x7f ? '_' : ch);
    }
    String out = sb.toString();
    while (out.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 256) {
      out = out.substring(1);
    }
    return out;
  }
}
