package dev.hotkey.kafka.internals;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.HotkeyStats;
import dev.hotkey.kafka.MergeContract;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Local tables with hotkey.transport=kafka on a real broker (the C++ client's
 * KafkaTransportTest.OwnerHeartbeatsSilence... and KafkaTransportFaultTest.ALostListsPartition...):
 * a topic's list goes stale when the ownership heartbeats on its lists partition stop (the
 * broker reachable throughout) or when the partition's broker is gone (kill -9 of a broker of
 * its own), and fresh again with the next heartbeat, list or contact.
 */
class KafkaLocalTablesTest {
  private static final int DATA_PARTITIONS = 12;
  private static final int LISTS_PARTITIONS = 3;
  private final List<AutoCloseable> closing = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closing.size() - 1; i >= 0; i--) {
      closing.get(i).close();
    }
  }

  private static boolean eventually(BooleanSupplier f, long seconds) throws InterruptedException {
    return TestData.eventually(seconds, f);
  }

  private static int listsPartition(String topic) {
    return Hashes.partitionFor(HashFamily.MURMUR2, topic.getBytes(StandardCharsets.UTF_8),
        LISTS_PARTITIONS);
  }

  private static void createTopics(String bootstrap, String... names) throws Exception {
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      List<NewTopic> topics = new ArrayList<>();
      for (String n : names) {
        topics.add(new NewTopic(n, LISTS_PARTITIONS, (short) 1));
      }
      admin.createTopics(topics).all().get(60, TimeUnit.SECONDS);
    }
  }

  /** The first topic {@code prefix + i} whose lists partition is (or, same false, is not) p. */
  private static String topicOn(String prefix, boolean same, int p) {
    for (int i = 0;; i++) {
      if ((listsPartition(prefix + i) == p) == same) {
        return prefix + i;
      }
    }
  }

  /** Writes records to the lists topic by hand, as coordinators in cluster mode do. */
  private static final class Writer implements AutoCloseable {
    final KafkaProducer<String, String> producer;
    final String lists;

    Writer(String bootstrap, String lists) {
      Properties w = new Properties();
      w.put("bootstrap.servers", bootstrap);
      w.put("key.serializer", StringSerializer.class.getName());
      w.put("value.serializer", StringSerializer.class.getName());
      w.put("max.block.ms", "10000");
      this.producer = new KafkaProducer<>(w);
      this.lists = lists;
    }

    void list(String topic, long version, String key) throws Exception {
      producer.send(new ProducerRecord<>(lists, listsPartition(topic), topic,
          Lists.listJson(topic, version, DATA_PARTITIONS, key, 1, 1, 1))).get();
    }

    @Override
    public void close() {
      producer.close();
    }
  }

  /** An owner's heartbeat on one lists partition every {@code everyMs}, format version v. */
  private static final class Owner implements AutoCloseable {
    private final AtomicBoolean beating = new AtomicBoolean(true);
    private final Thread thread;

    Owner(Writer w, int partition, long everyMs, int v) {
      thread = new Thread(() -> {
        while (beating.get()) {
          String beat = "{\"v\":" + v + ",\"owner\":\"http://127.0.0.1:1\",\"member_id\":\"m\","
              + "\"partition\":" + partition + ",\"epoch\":3,\"at_ms\":"
              + System.currentTimeMillis() + ",\"interval_ms\":" + everyMs + "}";
          try {
            w.producer.send(new ProducerRecord<>(w.lists, partition, "/owner", beat)).get();
            Thread.sleep(everyMs);
          } catch (Exception e) {
            return;
          }
        }
      }, "owner-heartbeat");
      thread.start();
    }

    @Override
    public void close() {
      beating.set(false);
      try {
        thread.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** A producer's partitioner (route mode, kafka transport) and a surge on one key. */
  private final class Producer implements AutoCloseable {
    final HotkeyPartitioner partitioner = new HotkeyPartitioner();
    final Cluster cluster;
    final String topic;
    private final Traffic traffic = new Traffic();

    Producer(String bootstrap, String lists, String reports, String topics, String... props) {
      Map<String, Object> configs = new HashMap<>();
      configs.put("client.id", "kafka-local-" + lists);
      configs.put("bootstrap.servers", bootstrap);
      configs.put("key.serializer", StringSerializer.class.getName());
      configs.put("hotkey.transport", "kafka");
      configs.put("hotkey.lists.topic", lists);
      configs.put("hotkey.reports.topic", reports);
      configs.put("hotkey.topics", topics);
      configs.put("hotkey.routing.mode", "route");
      configs.put("hotkey.report.interval.ms", "100");
      configs.put("hotkey.list.stale.ms", "1000");
      configs.put("hotkey.http.timeout.ms", "2000");
      for (int i = 0; i < props.length; i += 2) {
        configs.put(props[i], props[i + 1]);
      }
      partitioner.configure(configs);
      this.topic = topics.split(",")[0];
      this.cluster = Lists.cluster(topic, DATA_PARTITIONS);
      closing.add(this);
    }

    HotkeyClient client() {
      return partitioner.client();
    }

    HotkeyStats.TopicStats stats(String t) {
      HotkeyStats.TopicStats s = partitioner.stats().topic(t);
      return s != null ? s : new HotkeyStats.TopicStats(t, 0, -1, 0, 0, false, 0, 0, 0, 0, 1,
          false, 0, 0, 0);
    }

    int send(String t, String key) {
      return partitioner.partition(t, key, key.getBytes(StandardCharsets.UTF_8), null,
          new byte[1], t.equals(topic) ? cluster : Lists.cluster(t, DATA_PARTITIONS));
    }

    /** Half of t's records on {@code hot}, the rest over 500 keys. */
    void traffic(String t, String hot) {
      traffic.start(key -> send(t, key), hot);
    }

    /** The partitions n records of key go to, and whether its table now is the local mark V. */
    Set<Integer> partitionsOf(String t, String key, int n) {
      Set<Integer> out = new HashSet<>();
      for (int i = 0; i < n; i++) {
        out.add(send(t, key));
      }
      return out;
    }

    long tableVersion(String t) {
      return client().topic(t).tableFor(DATA_PARTITIONS).version;
    }

    @Override
    public void close() {
      traffic.close();
      partitioner.close();
    }
  }

  @Test
  void ownerHeartbeatsSilenceMakesATopicStaleAndTheyAreNeverAList() throws Exception {
    String bootstrap = TestBroker.bootstrap();
    String lists = "local-hb-lists";
    createTopics(bootstrap, lists, "local-hb-reports");
    String orders = "orders-hb";
    String payments = topicOn("payments-hb-", false, listsPartition(orders));
    Writer w = new Writer(bootstrap, lists);
    closing.add(w);
    // History: heartbeats of an owner long gone, read before the client reached the end of
    // the partition. They never start the clock.
    Owner old = new Owner(w, listsPartition(orders), 50, 1);
    try {
      Thread.sleep(300);
    } finally {
      old.close();
    }
    long v3 = (3L << 32) | 1;
    w.list(orders, v3, "listed");
    w.list(payments, 2, "listed");
    Producer c = new Producer(bootstrap, lists, "local-hb-reports", orders + "," + payments);
    assertTrue(eventually(() -> c.client().listVersion(orders) == v3
        && c.client().listVersion(payments) == 2, 60), "lists not read");
    c.traffic(orders, "surge");
    c.traffic(payments, "surge");
    Thread.sleep(2500); // well past the bound: the history did not count
    assertFalse(c.stats(orders).stale());
    assertEquals(0, c.stats(orders).localKeys());

    Owner owner = new Owner(w, listsPartition(orders), 200, 1);
    try {
      Thread.sleep(2500);
      assertFalse(c.stats(orders).stale());
      assertEquals(0, c.client().listErrors(), "\"/owner\" is never read as a list");
    } finally {
      owner.close();
    }
    // The owner stopped beating (killed): the topic is stale within the bound; the broker and
    // the partition are reachable all along, so that is the only reason.
    assertTrue(eventually(() -> c.stats(orders).localKeys() == 1, 30), "no local table");
    assertTrue(c.stats(orders).stale());
    assertEquals(MergeContract.LOCAL_TABLE_VERSION_BIT | v3, c.tableVersion(orders));
    assertTrue(c.partitionsOf(orders, "surge", 300).size() >= 4);
    assertEquals(1, TestLog.lines("kafka-local-" + lists, "the ownership heartbeats on lists"
        + " partition " + listsPartition(orders) + " of " + lists + " stopped").size());
    // A partition that never carried heartbeats (an older coordinator) is never judged by them.
    assertFalse(c.stats(payments).stale());
    assertEquals(0, c.stats(payments).localKeys());
    // Heartbeats of another format version are not this client's: still stale.
    Owner v2 = new Owner(w, listsPartition(orders), 200, 2);
    try {
      Thread.sleep(1500);
      assertTrue(c.stats(orders).stale());
    } finally {
      v2.close();
    }
    // The new owner takes over: it beats at once, and its list (a higher epoch) wins.
    Owner successor = new Owner(w, listsPartition(orders), 200, 1);
    try {
      long v4 = (4L << 32) | 1;
      w.list(orders, v4, "surge");
      assertTrue(eventually(() -> c.client().listVersion(orders) == v4, 30));
      assertTrue(eventually(() -> !c.stats(orders).stale(), 30), "still stale");
      assertEquals(0, c.stats(orders).localKeys());
      assertEquals(v4, c.tableVersion(orders));
      assertEquals(3, c.partitionsOf(orders, "surge", 300).size(), "the list's three salts");
      assertEquals(0, c.client().listErrors());
    } finally {
      successor.close();
    }
  }

  @Test
  void aTopicFollowedLaterOnAReadPartitionStartsFromItsCurrentList() throws Exception {
    String bootstrap = TestBroker.bootstrap();
    String lists = "local-late-lists";
    createTopics(bootstrap, lists, "local-late-reports");
    String first = "first-late";
    String second = topicOn("second-late-", true, listsPartition(first));
    Writer w = new Writer(bootstrap, lists);
    closing.add(w);
    w.list(first, 3, "a");
    w.list(second, 8, "b");
    Producer c = new Producer(bootstrap, lists, "local-late-reports", first);
    assertTrue(eventually(() -> c.client().listVersion(first) == 3, 60));
    c.send(second, "b"); // followed now: its list was read already, as history
    assertTrue(eventually(() -> c.client().listVersion(second) == 8, 30),
        "the list read before the topic was followed");
    assertTrue(c.client().topic(second).staleness.known());
  }

  /** A single-node cluster of this test's own (scripts/kafka.sh), so that it can kill it. */
  private static final class OwnBroker implements AutoCloseable {
    final Path dir;
    final Path script = TestData.root().resolve("scripts/kafka.sh");
    final String bootstrap;

    OwnBroker() throws Exception {
      dir = Files.createTempDirectory("hotkey-java-kafka-own");
      bootstrap = run("start", dir.toString(), "--owner",
          Long.toString(ProcessHandle.current().pid()));
    }

    String run(String... args) throws Exception {
      List<String> cmd = new ArrayList<>(List.of(script.toString()));
      cmd.addAll(List.of(args));
      Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      assertTrue(p.waitFor(300, TimeUnit.SECONDS) && p.exitValue() == 0,
          "kafka.sh " + String.join(" ", args) + " failed");
      String[] lines = out.split("\n");
      return lines[lines.length - 1].trim();
    }

    @Override
    public void close() throws java.io.IOException {
      try {
        run("stop", dir.toString());
        try (java.util.stream.Stream<Path> files = Files.walk(dir)) { // throwaway data
          files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (java.io.IOException | RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new java.io.IOException(e);
      }
    }
  }

  @Test
  void aLostListsPartitionMakesTheTopicStaleUntilContactIsBack() throws Exception {
    TestBroker.bootstrap(); // skips without scripts/kafka.sh
    OwnBroker broker = new OwnBroker();
    closing.add(broker);
    String lists = "lost-lists";
    createTopics(broker.bootstrap, lists, "lost-reports");
    String orders = "orders-lost";
    Writer w = new Writer(broker.bootstrap, lists);
    w.list(orders, 9, "a");
    w.close();
    Producer c = new Producer(broker.bootstrap, lists, "lost-reports", orders);
    assertTrue(eventually(() -> c.client().listVersion(orders) == 9, 60));
    c.traffic(orders, "surge");
    // A quiet but reachable log is not stale.
    Thread.sleep(3000);
    assertFalse(c.stats(orders).stale());
    assertEquals(0, c.stats(orders).localKeys());
    broker.run("kill-node", broker.dir.toString(), "0");
    long killed = System.nanoTime();
    assertTrue(eventually(() -> c.stats(orders).localKeys() == 1, 30), "no local table");
    System.out.printf("lists partition lost: local table %d ms after the broker's kill -9%n",
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed));
    assertTrue(c.stats(orders).stale());
    assertTrue(c.partitionsOf(orders, "surge", 300).size() >= 4);
    assertEquals(3, c.partitionsOf(orders, "a", 300).size(), "the list's key, as before");
    assertEquals(1, TestLog.lines("kafka-local-" + lists, "no sign of a live leader on lists"
        + " partition " + listsPartition(orders)).size());
    broker.run("start-node", broker.dir.toString(), "0");
    assertTrue(eventually(() -> c.stats(orders).localKeys() == 0, 90), "the local table stayed");
    assertFalse(c.stats(orders).stale());
    assertEquals(1, c.partitionsOf(orders, "surge", 300).size());
  }
}
