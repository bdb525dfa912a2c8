package dev.hotkey.kafka.internals;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyMetrics;
import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.HotkeyStats;
import dev.hotkey.kafka.MergeContract;
import dev.hotkey.kafka.consumer.LogicalKeys;
import dev.hotkey.kafka.consumer.RecoveredKey;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A surge during a coordinator outage (issue 37 item 3; the C++ client's
 * CoordinatorE2E.KillNineMidSurge...): a real KafkaProducer with the two hotkey classes, the
 * coordinator process killed with kill -9 mid-run and restarted on its data, a real broker. The
 * surge that starts while the list is stale is salted by a local table over many partitions,
 * its records on the broker carry hotkey.version 2^63 + V and number exactly what the producer
 * counted, and the restarted coordinator's list (which lists the surge) replaces the table.
 */
class LocalTablesEndToEndTest {
  private static final int PARTITIONS = 12;
  private static final String TOPIC = "outage";

  @BeforeAll
  static void needsCoordinator() {
    CoordinatorProcess.assumeBuilt();
  }

  private static boolean eventually(BooleanSupplier f) throws InterruptedException {
    return TestData.eventually(30, f);
  }

  private static boolean listed(HotkeyClient client, String key) {
    HotKeyList list = client.topic(TOPIC).list();
    if (list == null) {
      return false;
    }
    for (HotKeyList.HotKey k : list.keys) {
      if (new String(k.key, StandardCharsets.UTF_8).equals(key)) {
        return true;
      }
    }
    return false;
  }

  private static HotkeyStats.TopicStats stats(KafkaProducer<?, ?> producer) {
    return HotkeyMetrics.stats(producer).orElseThrow().topic(TOPIC);
  }

  @Test
  void killNineMidSurgeSaltsTheSurgeLocallyUntilTheRestartedCoordinatorsList(@TempDir Path dir)
      throws Exception {
    String bootstrap = TestBroker.bootstrap();
    TestBroker.createTopic(TOPIC, PARTITIONS);
    CoordinatorProcess coordinator = new CoordinatorProcess(dir);
    coordinator.start();
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("client.id", "outage-producer");
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    p.put("partitioner.class", HotkeyPartitioner.class.getName());
    p.put("interceptor.classes", HotkeyInterceptor.class.getName());
    p.put("linger.ms", "5");
    p.put("hotkey.coordinator.url", coordinator.url());
    p.put("hotkey.topics", TOPIC);
    // Every salted record with its list version (merge contract 1), as the checks below read.
    p.put("hotkey.merge.contract", "1");
    p.put("hotkey.report.interval.ms", "100");
    p.put("hotkey.poll.wait.ms", "500");
    p.put("hotkey.backoff.initial.ms", "20");
    p.put("hotkey.backoff.max.ms", "200");
    p.put("hotkey.http.timeout.ms", "1000");
    long version;
    long fresh;
    long localSalted;
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      HotkeyClient client = HotkeyClient.forClientId("outage-producer");
      // A quarter of the records on a key the coordinator lists from the start, half on the
      // surge key once it surges, the rest over 200 cold keys.
      AtomicBoolean surging = new AtomicBoolean();
      AtomicBoolean running = new AtomicBoolean(true);
      AtomicLong errors = new AtomicLong();
      Thread sender = new Thread(() -> {
        long n = 0;
        while (running.get()) {
          for (int i = 0; i < 40; i++) {
            String key = i % 4 == 0 ? "steady-hot"
                : surging.get() && i % 2 == 1 ? "surge-key" : "cold-" + (n * 40 + i) % 200;
            producer.send(new ProducerRecord<>(TOPIC, key, "v"), (md, e) -> {
              if (e != null) {
                errors.incrementAndGet();
              }
            });
          }
          n++;
          try {
            Thread.sleep(5);
          } catch (InterruptedException e) {
            return;
          }
        }
      }, "outage-sender");
      sender.start();
      try {
        assertTrue(eventually(() -> listed(client, "steady-hot")),
            "see " + dir.resolve("coordinator.log"));
        version = client.listVersion(TOPIC);
        BooleanSupplier local = () -> stats(producer).localKeys() == 1;

        coordinator.kill();
        long killed = System.nanoTime();
        assertTrue(eventually(() -> stats(producer).stale()));
        long stale = System.nanoTime();
        surging.set(true);
        assertTrue(eventually(local), "the surge was not salted locally");
        long salted = System.nanoTime();
        System.out.printf("list stale %d ms after kill -9; surge salted locally %d ms after it"
            + " started%n", TimeUnit.NANOSECONDS.toMillis(stale - killed),
            TimeUnit.NANOSECONDS.toMillis(salted - stale));
        TopicRouter.LocalTables tables = client.topic(TOPIC).localTables();
        assertArrayEquals("surge-key".getBytes(StandardCharsets.UTF_8), tables.keys.get(0).key);
        assertEquals(version, tables.baseVersion);
        Thread.sleep(1500); // the outage goes on

        // Back on the same data: its list (the surge detected from the producer's reports,
        // sent once it answers) wins.
        coordinator = new CoordinatorProcess(dir, coordinator.port);
        coordinator.start();
        assertTrue(eventually(() -> listed(client, "surge-key")
            && stats(producer).localKeys() == 0),
            "see " + dir.resolve("coordinator.log"));
        fresh = client.listVersion(TOPIC);
        assertTrue(Long.compareUnsigned(fresh, version) > 0);
        assertFalse(stats(producer).stale());
        Thread.sleep(300);
      } finally {
        running.set(false);
        sender.join();
        coordinator.close();
      }
      producer.flush();
      assertEquals(0, errors.get(), "records not acknowledged");
      localSalted = stats(producer).localSalted();
    }

    // What the broker holds: the surge's records salted by the local table carry the mark of
    // the list they were built on and land where Kafka's murmur2 of their salted key puts
    // them, over many partitions; then the coordinator's list takes over.
    Properties d = new Properties();
    d.put("key.deserializer", org.apache.kafka.common.serialization.ByteArrayDeserializer.class
        .getName());
    d.put("value.deserializer", StringDeserializer.class.getName());
    List<ConsumerRecord<byte[], String>> records = TestBroker.readAll(TOPIC, PARTITIONS, d);
    Set<Integer> localPartitions = new HashSet<>();
    long marked = 0;
    long byList = 0;
    for (ConsumerRecord<byte[], String> r : records) {
      RecoveredKey k = LogicalKeys.recover(r);
      if (!k.logicalKeyText().equals("surge-key") || !k.salted()) {
        continue;
      }
      assertEquals(BuiltInPartitioner.partitionForKey(r.key(), PARTITIONS), r.partition());
      if (MergeContract.isLocalTableVersion(k.version())) {
        assertEquals(MergeContract.LOCAL_TABLE_VERSION_BIT | version, k.version());
        localPartitions.add(r.partition());
        marked++;
      } else {
        assertTrue(Long.compareUnsigned(k.version(), fresh) >= 0, Long.toString(k.version()));
        byList++;
      }
    }
    System.out.printf("surge records: %d salted by the local table over %d partitions, %d by"
        + " the restarted coordinator's list%n", marked, localPartitions.size(), byList);
    assertTrue(localPartitions.size() >= 6, "local table partitions " + localPartitions);
    assertEquals(localSalted, marked, "every locally salted record, counted exactly");
    assertTrue(marked > 500, "marked " + marked);
    assertTrue(byList > 0);
  }
}
