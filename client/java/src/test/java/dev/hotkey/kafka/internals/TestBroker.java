package dev.hotkey.kafka.internals;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Assumptions;

/**
 * One real Apache Kafka broker (scripts/kafka.sh, KRaft on loopback) for every test class of
 * the test JVM that needs one: started by the first, stopped when the JVM exits (and by
 * kafka.sh itself if the JVM is killed: --owner).
 */
public final class TestBroker {
  private TestBroker() {}

  private static String bootstrap;
  private static Path dir;

  /** The broker's bootstrap servers; skips the test when scripts/kafka.sh is not there. */
  public static synchronized String bootstrap() throws Exception {
    if (bootstrap != null) {
      return bootstrap;
    }
    Path script = TestData.root().resolve("scripts/kafka.sh");
    Assumptions.assumeTrue(Files.isExecutable(script), "scripts/kafka.sh is not there");
    dir = Files.createTempDirectory("hotkey-java-kafka");
    Process p = new ProcessBuilder(script.toString(), "start", dir.toString(), "--owner",
        Long.toString(ProcessHandle.current().pid()))
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    assertTrue(p.waitFor(300, TimeUnit.SECONDS) && p.exitValue() == 0, "kafka.sh start failed");
    String[] lines = out.split("\n");
    bootstrap = lines[lines.length - 1].trim();
    Path stopDir = dir;
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        new ProcessBuilder(script.toString(), "stop", stopDir.toString()).inheritIO().start()
            .waitFor(60, TimeUnit.SECONDS);
      } catch (Exception e) {
        // the broker ends with its --owner anyway
      }
    }));
    return bootstrap;
  }

  /**
   * Creates a topic and waits until a client's metadata shows every partition led (the calls
   * used exist in every kafka-clients the compatibility profiles run: 3.0 to 4.4).
   */
  public static void createTopic(String topic, int partitions) throws Exception {
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap()))) {
      admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all()
          .get(60, TimeUnit.SECONDS);
    }
    Map<String, Object> c = Map.of("bootstrap.servers", bootstrap, "key.serializer",
        ByteArraySerializer.class.getName(), "value.serializer",
        ByteArraySerializer.class.getName());
    try (KafkaProducer<byte[], byte[]> metadata = new KafkaProducer<>(c)) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (System.nanoTime() < deadline) {
        List<PartitionInfo> ps = metadata.partitionsFor(topic);
        if (ps.size() == partitions
            && ps.stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty())) {
          return;
        }
        Thread.sleep(100);
      }
    }
    throw new AssertionError("topic " + topic + ": partitions not all led within 60 s");
  }

  /**
   * Every record of the topic's {@code partitions} up to their end offsets, read with the
   * consumer settings {@code deserializers} (key.deserializer, value.deserializer, ...).
   */
  public static <K, V> List<ConsumerRecord<K, V>> readAll(String topic, int partitions,
      Properties deserializers) throws Exception {
    Properties c = new Properties();
    c.putAll(deserializers);
    c.put("bootstrap.servers", bootstrap());
    List<ConsumerRecord<K, V>> out = new ArrayList<>();
    try (KafkaConsumer<K, V> consumer = new KafkaConsumer<>(c)) {
      List<TopicPartition> tps = new ArrayList<>();
      for (int p = 0; p < partitions; p++) {
        tps.add(new TopicPartition(topic, p));
      }
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      long expected = consumer.endOffsets(tps).values().stream().mapToLong(Long::longValue).sum();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (out.size() < expected && System.nanoTime() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(out::add);
      }
      assertEquals(expected, out.size(), "records read back");
    }
    return out;
  }
}
