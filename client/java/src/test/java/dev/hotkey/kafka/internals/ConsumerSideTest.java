package dev.hotkey.kafka.internals;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.consumer.LogicalKeyDeserializer;
import dev.hotkey.kafka.consumer.SubstreamMerger;
import dev.hotkey.kafka.examples.LogicalKeyCounts;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The consumer side on a real broker: records salted by a real KafkaProducer in rekey mode
 * (the hot key on three partitions) read back through LogicalKeyDeserializer, merged by
 * SubstreamMerger, and counted by the Kafka Streams example.
 */
class ConsumerSideTest {
  private static final int PARTITIONS = 6;

  @TempDir
  Path tmp;

  /** Produces {@code n} records (40% "hot", the rest over 25 cold keys), timestamps t0 + i. */
  private static List<String[]> produce(String topic, int n, long t0) throws Exception {
    TestBroker.createTopic(topic, PARTITIONS);
    Properties p = new Properties();
    p.put("bootstrap.servers", TestBroker.bootstrap());
    p.put("client.id", "consumer-side-" + topic);
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    p.put("partitioner.class", HotkeyPartitioner.class.getName());
    p.put("interceptor.classes", HotkeyInterceptor.class.getName());
    List<String[]> sent = new ArrayList<>();
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      HotkeyClient client = HotkeyClient.forClientId("consumer-side-" + topic);
      assertTrue(client.topic(topic).publish(
          Lists.list(topic, 1, PARTITIONS, "hot", 3334, 3333, 3333)));
      for (int i = 0; i < n; i++) {
        String key = i % 5 < 2 ? "hot" : "cold-" + (i % 25);
        String value = key + "/" + i;
        producer.send(new ProducerRecord<>(topic, null, t0 + i, key, value)).get();
        sent.add(new String[] {key, value});
      }
      assertEquals(n * 2 / 5, client.stats().topic(topic).salted(), "hot records salted");
    }
    return sent;
  }

  /** Every record of the topic, keys through LogicalKeyDeserializer. */
  private static List<ConsumerRecord<String, String>> readAll(String topic) throws Exception {
    Properties c = new Properties();
    c.put("key.deserializer", LogicalKeyDeserializer.class.getName());
    c.put(LogicalKeyDeserializer.INNER_CONFIG, StringDeserializer.class.getName());
    c.put("value.deserializer", StringDeserializer.class.getName());
    return TestBroker.readAll(topic, PARTITIONS, c);
  }

  /**
   * Keys come back logical (no "hot#N"), each logical key's record count is the count sent,
   * and the merger hands back every key's records in the order they were produced (the
   * producer stamped them t0 + i), each sub-stream (partition) in offset order; the hot key
   * read from three partitions.
   */
  @Test
  void logicalKeysAndTheMergedOrderOfASaltedKey() throws Exception {
    String topic = "consumer-merge";
    List<String[]> sent = produce(topic, 500, 1_700_000_000_000L);
    List<ConsumerRecord<String, String>> read = readAll(topic);
    Map<String, List<String>> expected = new LinkedHashMap<>();
    for (String[] kv : sent) {
      expected.computeIfAbsent(kv[0], k -> new ArrayList<>()).add(kv[1]);
    }
    Map<String, Integer> counted = new TreeMap<>();
    SubstreamMerger<String, String> merger = new SubstreamMerger<>(1000);
    for (ConsumerRecord<String, String> r : read) {
      assertFalse(r.key().contains("#"), "a salted key reached the application: " + r.key());
      counted.merge(r.key(), 1, Integer::sum);
      assertTrue(merger.add(r));
    }
    Map<String, Integer> want = new TreeMap<>();
    expected.forEach((k, v) -> want.put(k, v.size()));
    assertEquals(want, counted, "records per logical key");
    assertEquals(3, merger.substreams("hot"), "the hot key's sub-streams");
    Map<String, List<ConsumerRecord<String, String>>> merged = merger.drain(Long.MAX_VALUE);
    assertEquals(0, merger.buffered());
    for (Map.Entry<String, List<String>> e : expected.entrySet()) {
      List<String> values = new ArrayList<>();
      Map<Integer, Long> lastOffset = new HashMap<>();
      for (ConsumerRecord<String, String> r : merged.get(e.getKey())) {
        values.add(r.value());
        Long before = lastOffset.put(r.partition(), r.offset());
        assertTrue(before == null || before < r.offset(), "sub-stream out of offset order");
      }
      assertEquals(e.getValue(), values, "merged order of " + e.getKey());
    }
  }

  /**
   * The Kafka Streams example (LogicalKeyCounts): after salting, the count per logical key is
   * the number of records produced with it, and no salted key is counted on its own.
   */
  @Test
  void theStreamsExampleCountsPerLogicalKey() throws Exception {
    String input = "streams-in";
    String output = "streams-out";
    List<String[]> sent = produce(input, 400, System.currentTimeMillis());
    TestBroker.createTopic(output, 3);
    Map<String, Long> want = new TreeMap<>();
    for (String[] kv : sent) {
      want.merge(kv[0], 1L, Long::sum);
    }
    Properties s = new Properties();
    s.put(StreamsConfig.APPLICATION_ID_CONFIG, "hotkey-logical-key-counts");
    s.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, TestBroker.bootstrap());
    s.put(StreamsConfig.STATE_DIR_CONFIG, Files.createDirectories(tmp.resolve("state")).toString());
    s.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
    s.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
    s.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    s.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
    Map<String, Long> latest = new TreeMap<>();
    try (KafkaStreams streams = new KafkaStreams(LogicalKeyCounts.topology(input, output), s)) {
      streams.start();
      Properties c = new Properties();
      c.put("bootstrap.servers", TestBroker.bootstrap());
      c.put("key.deserializer", StringDeserializer.class.getName());
      c.put("value.deserializer", LongDeserializer.class.getName());
      try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(c)) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < 3; p++) {
          tps.add(new TopicPartition(output, p));
        }
        consumer.assign(tps);
        consumer.seekToBeginning(tps);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (!latest.equals(want) && System.nanoTime() < deadline) {
          for (ConsumerRecord<String, Long> r : consumer.poll(Duration.ofMillis(200))) {
            latest.put(r.key(), r.value());
          }
        }
      }
    }
    assertEquals(want.keySet(), latest.keySet(), "logical keys counted (no salted key)");
    assertEquals(want, latest, "count per logical key");
    assertTrue(Set.of(want.keySet().toArray()).contains("hot"));
  }
}
