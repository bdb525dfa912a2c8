package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyConfig;
import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.MergeContract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Partitioner;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/** hotkey.* properties: validated with clear ConfigExceptions, never "unused" to Kafka. */
class ConfigTest {
  private static Map<String, Object> props(String... kv) {
    Map<String, Object> m = new HashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  private static String refused(String... kv) {
    return assertThrows(ConfigException.class, () -> Settings.parse(props(kv))).getMessage();
  }

  @Test
  void badValuesNameThePropertyAndSayWhy() {
    assertEquals("Invalid value 2 for configuration hotkey.sample.rate: must be in [1e-06, 1]",
        refused("hotkey.sample.rate", "2"));
    assertTrue(refused("hotkey.sample.rate", "often").contains("expected auto or a number"));
    assertTrue(refused("hotkey.report.interval.ms", "5").contains("out of range [10, 3600000]"));
    assertTrue(refused("hotkey.report.interval.ms", "-1").contains("out of range [10, 3600000]"));
    assertTrue(refused("hotkey.report.interval.ms", "often").contains("hotkey.report.interval.ms"));
    assertTrue(refused("hotkey.salt.headers", "yes").contains("true or false"));
    assertTrue(refused("hotkey.sketch.capacity", "65537").contains("hotkey.sketch.capacity"));
    assertTrue(refused("hotkey.routing.mode", "scatter").contains("expected rekey, route"));
    assertTrue(refused("hotkey.salt.policy", "x").contains("expected wrr, value_hash, random"));
    assertTrue(refused("hotkey.coordinator.url", "coordinator:8470").contains("http://HOST:PORT"));
    assertTrue(refused("hotkey.hash", "crc32").contains("murmur2"));
    assertTrue(refused("hotkey.hash", "sha1").contains("expected murmur2, crc32 or fnv1a"));
    assertTrue(refused("hotkey.surge.factor", "0").contains("[0.01, 1000]"));
    assertTrue(refused("hotkey.topics", "a,b c").contains("invalid topic name \"b c\""));
    assertTrue(refused("hotkey.list.expired.policy", "drop").contains("expected keep, plain"));
    assertTrue(refused("hotkey.backoff.initial.ms", "500", "hotkey.backoff.max.ms", "100")
        .contains("hotkey.backoff.max.ms must be >= hotkey.backoff.initial.ms"));
    assertTrue(refused("hotkey.coordinator.url", "http://c:1",
        "hotkey.coordinator.ssl.ca.location", "/etc/hostname").contains("https://"));
    assertTrue(refused("hotkey.kafka.acks", "all").contains("needs hotkey.transport=kafka"));
    assertTrue(refused("hotkey.transport", "kafka").contains("bootstrap.servers"));
    assertTrue(refused("hotkey.transport", "kafka", "bootstrap.servers", "b:9092",
        "hotkey.report.format", "json").contains("binary"));
  }

  /**
   * The default hotkey.producer.id is <hostname>-<pid>-<client.id> (docs/CLIENT-JAVA.md):
   * producers in one JVM report under distinct ids named after their client.id, and two live
   * clients given one client.id get -2 appended to the second.
   */
  @Test
  void defaultProducerIdsNameTheClientId() {
    String prefix = Settings.defaultProducerId(null) + "-";
    HotkeyPartitioner a = new HotkeyPartitioner();
    HotkeyPartitioner b = new HotkeyPartitioner();
    HotkeyPartitioner again = new HotkeyPartitioner();
    HotkeyPartitioner named = new HotkeyPartitioner();
    try {
      a.configure(props("client.id", "producer-a"));
      b.configure(props("client.id", "producer-b"));
      again.configure(props("client.id", "producer-a", "hotkey.sketch.capacity", "64"));
      named.configure(props("client.id", "producer-c", "hotkey.producer.id", "billing-7"));
      assertEquals(prefix + "producer-a", a.stats().producerId());
      assertEquals(prefix + "producer-b", b.stats().producerId());
      assertEquals(prefix + "producer-a-2", again.stats().producerId());
      assertEquals("billing-7", named.stats().producerId());
    } finally {
      a.close();
      b.close();
      again.close();
      named.close();
    }
  }

  @Test
  void unknownHotkeyNamesAreRefused() {
    assertTrue(refused("hotkey.sample.rat", "0.5").contains("unknown property hotkey.sample.rat"));
  }

  @Test
  void goodValuesParse() {
    Settings c = Settings.parse(props("hotkey.sample.rate", "0.01",
        "hotkey.routing.mode", "route", "hotkey.topics", " a, b ", "hotkey.list.ttl.ms",
        "4294967295", "hotkey.transport", "kafka", "bootstrap.servers", "b:9092",
        "sasl.mechanism", "PLAIN", "acks", "1", "hotkey.kafka.client.rack", "r1"));
    assertFalse(c.sampleAuto);
    assertEquals(0.01, c.sampleRate);
    assertEquals(Settings.RoutingMode.ROUTE, c.routingMode);
    assertEquals(List.of("a", "b"), c.topics);
    assertEquals(4294967295L, c.listTtlMs);
    // The transport inherits the connection settings, never producer tuning.
    assertEquals(Map.of("bootstrap.servers", "b:9092", "sasl.mechanism", "PLAIN",
        "client.rack", "r1"), c.kafkaSettings);
  }

  @Test
  void rekeyModeRefusesKeysItCannotRewrite() {
    HotkeyInterceptor i = new HotkeyInterceptor();
    ConfigException e = assertThrows(ConfigException.class, () -> i.configure(props(
        "client.id", "cfg-long", "key.serializer", LongSerializer.class.getName(),
        "partitioner.class", HotkeyPartitioner.class.getName())));
    assertTrue(e.getMessage().contains("hotkey.routing.mode=route"), e.getMessage());
  }

  /**
   * interceptor.classes without partitioner.class (issue 38: it silently did nothing, no
   * reports, the key never listed) is refused when the producer is created, naming the
   * missing setting; another partitioner is refused the same way.
   */
  @Test
  void theInterceptorWithoutThePartitionerIsRefused() {
    HotkeyInterceptor alone = new HotkeyInterceptor();
    ConfigException e = assertThrows(ConfigException.class,
        () -> alone.configure(props("client.id", "cfg-alone")));
    assertTrue(e.getMessage().contains("partitioner.class=dev.hotkey.kafka.HotkeyPartitioner"),
        e.getMessage());
    assertTrue(e.getMessage().startsWith("Invalid value (not set) for configuration"
        + " partitioner.class"), e.getMessage());
    assertThrows(ConfigException.class, () -> new HotkeyInterceptor().configure(props(
        "client.id", "cfg-other", "partitioner.class",
        "org.apache.kafka.clients.producer.RoundRobinPartitioner")));
    Map<String, Object> asClass = props("client.id", "cfg-class");
    asClass.put("partitioner.class", HotkeyPartitioner.class);
    HotkeyInterceptor ok = new HotkeyInterceptor();
    ok.configure(asClass);
    ok.close();

    Properties p = producerProps();
    p.remove("partitioner.class");
    KafkaException ke = assertThrows(KafkaException.class, () -> new KafkaProducer<>(p));
    Throwable cause = ke;
    while (cause.getCause() != null && !(cause instanceof ConfigException)) {
      cause = cause.getCause();
    }
    assertTrue(cause instanceof ConfigException, String.valueOf(cause));
    assertTrue(cause.getMessage().contains("partitioner.class"), cause.getMessage());
  }

  /**
   * kafka-clients outside the tested lines (3.0-3.9, 4.0-4.4, and Confluent's builds of them)
   * is refused at configuration with the reason and the way out, or logged under warn.
   */
  @Test
  void kafkaClientsOutsideTheTestedLinesAreRefused() {
    for (String ok : new String[] {"3.0.0", "3.3.2", "3.9.2", "4.0.0", "4.1.1", "4.4.0",
        "7.6.0-ccs", "8.0.1-ccs", "unknown", ""}) {
      assertEquals(null, KafkaVersions.outsideRange(ok), ok);
      HotkeyClient.checkKafkaVersion(ok, true);
    }
    for (String no : new String[] {"2.8.1", "2.0.0", "4.5.0", "5.0.0", "6.2.0-ccs"}) {
      assertTrue(KafkaVersions.outsideRange(no) != null, no);
      ConfigException e = assertThrows(ConfigException.class,
          () -> HotkeyClient.checkKafkaVersion(no, true));
      assertTrue(e.getMessage().startsWith("kafka-clients " + no + " is "), e.getMessage());
      assertTrue(e.getMessage().contains("(3.0-3.9, 4.0-4.4)"), e.getMessage());
      assertTrue(e.getMessage().contains("hotkey.clients.version.check=warn"), e.getMessage());
      HotkeyClient.checkKafkaVersion(no, false); // warn: runs
    }
    // The running kafka-clients (4.1.1 here, each profile's version under -Pkafka-*) passes.
    assertEquals(null, KafkaVersions.outsideRange(KafkaVersions.running()));
  }

  private static Properties producerProps() {
    Properties p = new Properties();
    p.put("bootstrap.servers", "127.0.0.1:1");
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    p.put("partitioner.class", HotkeyPartitioner.class.getName());
    p.put("interceptor.classes", HotkeyInterceptor.class.getName());
    p.put("hotkey.sample.rate", "0.5");
    p.put("hotkey.surge.factor", "2");
    return p;
  }

  @Test
  void noHotkeyPropertyIsReportedUnusedByKafka() {
    // What KafkaProducer does with its configuration: plugins get the recording originals.
    ProducerConfig config = new ProducerConfig(producerProps());
    Map<String, Object> clientId = Map.of("client.id", "cfg-unused");
    Partitioner p = config.getConfiguredInstance(ProducerConfig.PARTITIONER_CLASS_CONFIG,
        Partitioner.class, clientId);
    @SuppressWarnings("rawtypes")
    List<ProducerInterceptor> interceptors = config.getConfiguredInstances(
        ProducerConfig.INTERCEPTOR_CLASSES_CONFIG, ProducerInterceptor.class, clientId);
    try {
      for (String name : config.unused()) {
        assertFalse(name.startsWith("hotkey."), "reported unused: " + name);
      }
      assertEquals(((HotkeyPartitioner) p).client(),
          ((HotkeyInterceptor) interceptors.get(0)).client());
    } finally {
      p.close();
      interceptors.get(0).close();
    }
  }

  @Test
  void aRealProducerAdoptsItByConfigurationAndRefusesBadValues() {
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps())) {
      assertTrue(producer.metrics().size() > 0);
      producer.close(Duration.ZERO);
    }
    Properties bad = producerProps();
    bad.put("hotkey.sample.rate", "2");
    KafkaException e = assertThrows(KafkaException.class, () -> new KafkaProducer<>(bad));
    Throwable cause = e;
    while (cause.getCause() != null && !(cause instanceof ConfigException)) {
      cause = cause.getCause();
    }
    assertTrue(cause instanceof ConfigException, String.valueOf(cause));
    assertTrue(cause.getMessage().contains("hotkey.sample.rate"), cause.getMessage());
  }
}
