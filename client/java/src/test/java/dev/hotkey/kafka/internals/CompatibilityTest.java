package dev.hotkey.kafka.internals;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.HotkeyStats;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Properties;
import java.util.Set;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What differs between kafka-clients versions, on a real broker. Run by the default build
 * (kafka-clients 4.1.1) and, with the jar as built, on the ends of every supported line: mvn
 * -P kafka-3.0, kafka-3.9, kafka-4.0, kafka-4.4 (scripts/test.sh runs them). Before 4.0,
 * KafkaProducer calls the partitioner a second time for every record that opens a new batch
 * (after onNewBatch); with batch.size=0 that is every record.
 */
class CompatibilityTest {
  private static final int PARTITIONS = 6;
  private static final int RECORDS = 300;
  private static final Pattern SALTED = Pattern.compile("hot#[0-9]+");

  private static KafkaProducer<String, String> producer(String mode) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", TestBroker.bootstrap());
    p.put("client.id", "compat-" + mode);
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    p.put("batch.size", "0"); // a batch per record: every record opens a new batch
    p.put("linger.ms", "0");
    p.put("partitioner.class", HotkeyPartitioner.class.getName());
    p.put("interceptor.classes", HotkeyInterceptor.class.getName());
    p.put("hotkey.routing.mode", mode);
    p.put("hotkey.sample.rate", "1"); // every keyed record in the sketch: counts exact
    return new KafkaProducer<>(p);
  }

  /**
   * Every record is counted once in the totals, the partition counts and the sketch, the hot
   * key under its own name (never its salted key), in both routing modes; hot records land on
   * the listed salts' partitions, cold ones where the built-in partitioner puts them.
   */
  @ParameterizedTest
  @ValueSource(strings = {"route", "rekey"})
  void everyRecordIsCountedOnceWhateverTheVersion(String mode) throws Exception {
    String topic = "compat-" + mode;
    TestBroker.createTopic(topic, PARTITIONS);
    HotKeyList list = Lists.list(topic, 1, PARTITIONS, "hot", 5000, 5000);
    Set<Integer> salts = new HashSet<>();
    list.keys.get(0).salts.forEach(s -> salts.add(s.partition));
    int hot = 0;
    int keyless = 0;
    try (KafkaProducer<String, String> producer = producer(mode)) {
      HotkeyClient client = HotkeyClient.forClientId("compat-" + mode);
      assertTrue(client.topic(topic).publish(list));
      for (int i = 0; i < RECORDS; i++) {
        String key = i % 15 == 14 ? null : i % 5 < 2 ? "hot" : "cold-" + i;
        RecordMetadata md = producer.send(new ProducerRecord<>(topic, key, "v" + i)).get();
        if (key == null) {
          keyless++;
        } else if (key.equals("hot")) {
          hot++;
          assertTrue(salts.contains(md.partition()), "hot on " + md.partition() + " " + salts);
        } else {
          assertEquals(Hashes.partitionFor(HashFamily.MURMUR2,
              key.getBytes(StandardCharsets.UTF_8), PARTITIONS), md.partition(), key);
        }
      }
      HotkeyStats.TopicStats t = client.stats().topic(topic);
      assertEquals(hot, t.salted(), "salted, kafka-clients " + KafkaVersions.running());
      assertEquals(RECORDS - keyless - hot, t.cold(), "cold");
      assertEquals(keyless, t.nullKey(), "without a key");
      Sampler.Window w = client.topic(topic).sampler.drain(PARTITIONS, 1000, 1000);
      assertEquals(RECORDS - keyless, w.total, "window total");
      long sum = 0;
      for (long c : w.partitionCounts) {
        sum += c;
      }
      assertEquals(RECORDS - keyless, sum, "partition counts");
      assertEquals(RECORDS - keyless, w.sketchTotal, "sketch total");
      long hotInSketch = 0;
      for (SpaceSaving.Item it : w.sketch.items()) {
        String k = new String(it.key, StandardCharsets.UTF_8);
        assertFalse(SALTED.matcher(k).matches(), "a salted key counted as its own: " + k);
        if (k.equals("hot")) {
          hotInSketch = it.count;
          assertEquals(0, it.error);
        }
      }
      assertEquals(hot, hotInSketch, "the hot key in the sketch");
    }
    assertNull(HotkeyClient.forClientId("compat-" + mode), "closed with the producer");
  }
}
