package dev.hotkey.kafka.internals;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * hotkey.transport=kafka (docs/CLIENT.md "Kafka transport", client/src/kafka_transport.cc):
 * reports are produced to the reports topic keyed by the data topic (murmur2 partition, header
 * hotkey.report.v: 1, idempotent, acks=all); lists are read from the lists partitions of the
 * client's topics (murmur2(topic) % N), from the beginning, then tailed, each validated like a
 * long-poll answer; a tombstone drops the topic's list and keeps its version floor.
 */
final class KafkaTransport implements HotkeyClient.ListSource {
  private final Settings config;
  private final HotkeyClient client;
  private volatile KafkaProducer<byte[], byte[]> producer;
  private final Object producerLock = new Object();
  final AtomicLong delivered = new AtomicLong();
  final AtomicLong undelivered = new AtomicLong();
  private final Map<String, TopicRouter> followed = new ConcurrentHashMap<>();
  private volatile boolean stopping;
  // The consumer thread's pauses wait on this; close() wakes them. The thread is never
  // interrupted: an interrupt that landed while it closed its consumer made KafkaConsumer.close()
  // throw InterruptException out of the thread (printed by the default handler at shutdown).
  private final Object pauses = new Object();
  private Thread consumerThread;
  private volatile KafkaConsumer<byte[], byte[]> consumer;
  // The consumer thread only. The newest record of every key read from the assigned partitions
  // (null: a tombstone), so a topic followed later on an already assigned partition starts from
  // its current list; what each followed topic was last given.
  private final Map<String, byte[]> latest = new HashMap<>();
  private final Set<String> given = new HashSet<>();
  // Staleness (docs/CLIENT.md, "Local tables"), the consumer thread only: per lists partition
  // the last sign of a live leader (a record, an answered offsets request; System.nanoTime),
  // whether it was read to its end once since assigned (heartbeats read before that are
  // history), and the last ownership heartbeat received after that, by this client's clock.
  private final Map<Integer, Long> contactNanos = new HashMap<>();
  private final Set<Integer> caughtUp = new HashSet<>();
  private final Map<Integer, long[]> heartbeats = new HashMap<>(); // {received nanos, interval}
  private final long startedNanos = System.nanoTime();
  private int partitionCount; // of the lists topic, as last seen (0: not yet)
  /** The key of the ownership heartbeat records on the lists topic (never a topic's name). */
  static final String OWNER_HEARTBEAT_KEY = "/owner";

  KafkaTransport(Settings config, HotkeyClient client) {
    this.config = config;
    this.client = client;
  }

  private Properties base() {
    Properties p = new Properties();
    for (Map.Entry<String, Object> e : config.kafkaSettings.entrySet()) {
      p.put(e.getKey(), e.getValue());
    }
    return p;
  }

  private KafkaProducer<byte[], byte[]> producer() {
    KafkaProducer<byte[], byte[]> p = producer;
    if (p != null) {
      return p;
    }
    synchronized (producerLock) {
      if (producer == null && !stopping) {
        Properties props = base();
        props.put("enable.idempotence", "true");
        props.put("acks", "all");
        props.put("delivery.timeout.ms", "60000");
        props.put("max.block.ms", String.valueOf(config.httpTimeoutMs));
        props.put("allow.auto.create.topics", "false");
        props.remove("partitioner.class");
        props.remove("interceptor.classes");
        producer = new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
      }
      return producer;
    }
  }

  /** Queues one report; false when the producer cannot take it now (stays queued). */
  boolean sendReport(String topic, byte[] body) {
    try {
      ProducerRecord<byte[], byte[]> r =
          new ProducerRecord<>(config.reportsTopic, topic.getBytes(StandardCharsets.UTF_8), body);
      r.headers().add(Report.KAFKA_FORMAT_HEADER,
          Report.KAFKA_FORMAT_VERSION.getBytes(StandardCharsets.US_ASCII));
      producer().send(r, (md, ex) -> {
        if (ex == null) {
          delivered.incrementAndGet();
          client.log.succeeded("reports", "reports topic " + config.reportsTopic);
        } else {
          undelivered.incrementAndGet();
          client.log.failed("reports", "reports topic " + config.reportsTopic, ex.toString());
        }
      });
      return true;
    } catch (RuntimeException e) {
      return false;
    }
  }

  void flushReports(long timeoutMs) {
    KafkaProducer<byte[], byte[]> p = producer;
    if (p != null) {
      Thread t = new Thread(p::flush, "hotkey-report-flush");
      t.setDaemon(true);
      t.start();
      try {
        t.join(timeoutMs);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  void closeProducer() {
    synchronized (producerLock) {
      if (producer != null) {
        producer.close(Duration.ofMillis(config.httpTimeoutMs));
        producer = null;
      }
    }
  }

  @Override
  public void follow(TopicRouter topic) {
    followed.putIfAbsent(topic.topic, topic);
    synchronized (this) {
      if (consumerThread == null && !stopping) {
        consumerThread = new Thread(this::consume, "hotkey-lists-kafka");
        consumerThread.setDaemon(true);
        consumerThread.start();
      }
    }
    KafkaConsumer<byte[], byte[]> c = consumer;
    if (c != null) {
      c.wakeup();
    }
  }

  private void consume() {
    Properties props = base();
    props.put("group.id", "hotkey.clients");
    props.put("enable.auto.commit", "false");
    props.put("auto.offset.reset", "earliest");
    // Coordinators with kafka.lists_fencing=1 write each list in a transaction; a fenced former
    // owner's aborted write must never be read (librdkafka's default, which the C++ client has).
    props.put("isolation.level", "read_committed");
    // Kafka's default, set here so it is seen: a broker answers a parked fetch on append, so
    // the wait only sets how often an idle client asks (the C++ client's fetch.wait.max.ms).
    props.putIfAbsent("fetch.max.wait.ms", "500");
    props.put("allow.auto.create.topics", "false");
    KafkaConsumer<byte[], byte[]> c =
        new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    consumer = c;
    Set<TopicPartition> assigned = new HashSet<>();
    partitionCount = 0;
    long lastContact = System.nanoTime();
    Backoff backoff = new Backoff(config.backoffInitialMs, config.backoffMaxMs);
    try {
      while (!stopping) {
        try {
          List<PartitionInfo> parts = c.partitionsFor(config.listsTopic, Duration.ofSeconds(5));
          if (parts == null || parts.isEmpty()) {
            pause(Math.min(5000, backoff.nextMs()));
            continue;
          }
          int n = parts.size();
          if (n != partitionCount) {
            // Another partition count: every topic's partition moves; read them all again.
            partitionCount = n;
            c.assign(new ArrayList<>());
            assigned = new HashSet<>();
            latest.clear();
            given.clear();
            caughtUp.clear();
            heartbeats.clear();
            contactNanos.clear();
          }
          Set<TopicPartition> want = new HashSet<>();
          for (String t : followed.keySet()) {
            want.add(new TopicPartition(config.listsTopic, partitionOf(t)));
          }
          if (!want.equals(assigned)) {
            Set<TopicPartition> added = new HashSet<>(want);
            added.removeAll(assigned);
            c.assign(new ArrayList<>(want));
            c.seekToBeginning(added);
            assigned = want;
          }
          catchUpFollowed();
          for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(500))) {
            lastContact = System.nanoTime();
            contactNanos.put(rec.partition(), lastContact);
            onRecord(rec, n);
          }
          if (config.listStaleMs > 0) {
            readToTheEnd(c, assigned);
            probe(c, assigned);
          }
          applyStaleness();
          lastContact = System.nanoTime();
          for (TopicRouter t : followed.values()) {
            t.contact(lastContact);
          }
          client.log.succeeded("lists", "lists topic " + config.listsTopic);
          backoff.reset();
          applyTtl(lastContact);
        } catch (WakeupException e) {
          // A topic was added, or close(): look at the assignment (and at stopping) again.
        } catch (RuntimeException e) {
          if (stopping) {
            break;
          }
          client.listErrors.incrementAndGet();
          client.log.failed("lists", "lists topic " + config.listsTopic, String.valueOf(e));
          applyTtl(lastContact);
          applyStaleness();
          long wait = backoff.nextMs();
          pause(config.listStaleMs > 0 ? Math.min(wait, Math.max(100, config.listStaleMs / 4))
              : wait);
        }
      }
    } finally {
      consumer = null;
      c.close();
    }
  }

  /** Waits up to ms, or until close(). */
  private void pause(long ms) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
    synchronized (pauses) {
      long left;
      while (!stopping && (left = deadline - System.nanoTime()) > 0) {
        try {
          TimeUnit.NANOSECONDS.timedWait(pauses, left);
        } catch (InterruptedException e) {
          // The thread is the library's own and only close() ends it: an interrupt from
          // elsewhere ends the pause, not the thread (with the flag kept, every poll after it
          // would throw InterruptException).
          return;
        }
      }
    }
  }

  private void applyTtl(long lastContact) {
    if (config.listTtlMs == 0 || config.expiredPolicy != Settings.ExpiredPolicy.PLAIN) {
      return;
    }
    boolean expired = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - lastContact)
        > config.listTtlMs;
    for (TopicRouter t : followed.values()) {
      if (t.plain() != expired) {
        t.setPlain(expired);
      }
    }
  }

  /** The lists partition of a data topic (docs/CONTRACTS.md section 11). */
  private int partitionOf(String topic) {
    return Hashes.partitionFor(HashFamily.MURMUR2, topic.getBytes(StandardCharsets.UTF_8),
        partitionCount);
  }

  /**
   * Topics followed since their partition was read: the newest record read there for each (its
   * list, or a tombstone), and, once the partition was read to its end, their list state known.
   */
  private void catchUpFollowed() {
    for (TopicRouter t : followed.values()) {
      int p = partitionOf(t.topic);
      if (!given.contains(t.topic) && latest.containsKey(t.topic)) {
        given.add(t.topic);
        onValue(t, latest.get(t.topic));
      }
      if (caughtUp.contains(p)) {
        t.staleness.setKnown();
      }
    }
  }

  /**
   * Partitions read to their end (the consumer's lag after its last fetch is 0): a followed
   * topic without a record there has no list, and heartbeats from now on are live.
   */
  private void readToTheEnd(KafkaConsumer<byte[], byte[]> c, Set<TopicPartition> assigned) {
    for (TopicPartition tp : assigned) {
      if (caughtUp.contains(tp.partition())) {
        continue;
      }
      java.util.OptionalLong lag = c.currentLag(tp);
      if (lag.isPresent() && lag.getAsLong() == 0) {
        caughtUp.add(tp.partition());
        contactNanos.put(tp.partition(), System.nanoTime());
      }
    }
    catchUpFollowed();
  }

  /**
   * A sign of a live leader on each assigned partition that gave none for hotkey.list.stale.ms
   * / 2 (100 ms to 5 s): its end offset asked (a ListOffsets request the leader answers, waited
   * for at most as long). A quiet log on a live cluster is not an outage; a dead leader answers
   * nothing. Partitions that carry records (heartbeats every second in cluster mode) are not
   * asked.
   */
  private void probe(KafkaConsumer<byte[], byte[]> c, Set<TopicPartition> assigned) {
    long every = TimeUnit.MILLISECONDS.toNanos(Math.max(100, Math.min(5000,
        config.listStaleMs / 2)));
    for (TopicPartition tp : assigned) {
      Long last = contactNanos.get(tp.partition());
      if (last != null && System.nanoTime() - last < every) {
        continue;
      }
      try {
        c.endOffsets(List.of(tp), Duration.ofNanos(every));
        contactNanos.put(tp.partition(), System.nanoTime());
      } catch (org.apache.kafka.common.errors.TimeoutException e) {
        // no answer: no contact
      }
    }
  }

  /**
   * One ownership heartbeat (docs/CONTRACTS.md section 11): counted when it is a version-1
   * heartbeat naming this partition and the partition was read to its end before it came; timed
   * by this client's clock (its at_ms is the writer's and not used).
   */
  private void onHeartbeat(ConsumerRecord<byte[], byte[]> rec) {
    if (rec.value() == null || !caughtUp.contains(rec.partition())) {
      return;
    }
    long[] beat = parseHeartbeat(rec.value());
    if (beat == null || beat[0] != rec.partition()) {
      return;
    }
    heartbeats.put(rec.partition(), new long[] {System.nanoTime(), Math.min(beat[1], 3600000)});
  }

  /** {partition, interval_ms} of a valid version-1 heartbeat value, or null (kafka_contract.cc). */
  static long[] parseHeartbeat(byte[] value) {
    Object doc;
    try {
      doc = Json.parse(new String(value, StandardCharsets.UTF_8));
    } catch (Json.SyntaxError e) {
      return null;
    }
    if (!(doc instanceof Map)) {
      return null;
    }
    Map<?, ?> j = (Map<?, ?>) doc;
    Object owner = j.get("owner");
    java.math.BigInteger v = unsigned(j.get("v"), 1);
    java.math.BigInteger partition = unsigned(j.get("partition"), Integer.MAX_VALUE);
    java.math.BigInteger epoch = unsigned(j.get("epoch"), 0xffffffffL);
    java.math.BigInteger at = unsigned(j.get("at_ms"), Long.MAX_VALUE);
    java.math.BigInteger interval = unsigned(j.get("interval_ms"), 0xffffffffL);
    if (v == null || v.intValue() != 1 || !(owner instanceof String) || ((String) owner).isEmpty()
        || partition == null || epoch == null || at == null || interval == null) {
      return null;
    }
    return new long[] {partition.longValue(), interval.longValue()};
  }

  private static java.math.BigInteger unsigned(Object v, long max) {
    if (!(v instanceof Json.Num) || !((Json.Num) v).isUnsigned()) {
      return null;
    }
    java.math.BigInteger n = ((Json.Num) v).integer;
    return n.compareTo(java.math.BigInteger.valueOf(max)) <= 0 ? n : null;
  }

  /**
   * hotkey.list.stale.ms: a followed topic's list is stale when its lists partition gave no
   * sign of a live leader for the bound, or when it carried ownership heartbeats and none came
   * for the bound (or twice the announced interval, when that is longer). A topic that stops
   * being stale has its local tables dropped at once.
   */
  private void applyStaleness() {
    long bound = config.listStaleMs;
    if (bound == 0 || partitionCount == 0) {
      return;
    }
    long now = System.nanoTime();
    for (TopicRouter t : followed.values()) {
      int p = partitionOf(t.topic);
      long last = contactNanos.getOrDefault(p, startedNanos);
      long[] beat = heartbeats.get(p);
      boolean gone = beat != null
          && TimeUnit.NANOSECONDS.toMillis(now - beat[0]) > Math.max(bound, 2 * beat[1]);
      boolean was = client.stale(t);
      t.staleness.setUnreachable(TimeUnit.NANOSECONDS.toMillis(now - last) > bound,
          "no sign of a live leader on lists partition " + p + " of " + config.listsTopic);
      t.staleness.setOwnerGone(gone, "the ownership heartbeats on lists partition " + p + " of "
          + config.listsTopic + " stopped");
      if (was && !client.stale(t)) {
        t.dropLocalTables();
      }
    }
  }

  private void onRecord(ConsumerRecord<byte[], byte[]> rec, int partitions) {
    if (rec.key() == null) {
      return;
    }
    String topic = new String(rec.key(), StandardCharsets.UTF_8);
    if (topic.equals(OWNER_HEARTBEAT_KEY)) {
      onHeartbeat(rec); // never a list
      return;
    }
    latest.put(topic, rec.value());
    TopicRouter t = followed.get(topic);
    if (t == null) {
      return;
    }
    given.add(topic);
    onValue(t, rec.value());
  }

  /** A record's value for followed topic t: its list (validated), or a tombstone (null). */
  private void onValue(TopicRouter t, byte[] value) {
    String topic = t.topic;
    if (value == null) {
      t.staleness.setKnown();
      if (t.removeList()) {
        client.listUpdates.incrementAndGet();
      }
      return;
    }
    try {
      HotKeyList list = HotKeyList.parse(value);
      if (!list.topic.equals(topic)) {
        client.listErrors.incrementAndGet();
        client.log.listRefused(topic, "the record holds the list of topic " + list.topic);
        return;
      }
      t.staleness.setKnown();
      if (!client.published(t, list)) {
        client.listErrors.incrementAndGet();
        client.log.listRefused(topic, HotkeyClient.refusal(t, list));
      }
    } catch (DecodeException e) {
      client.listErrors.incrementAndGet();
      client.log.listRefused(topic, e.getMessage());
    }
  }

  @Override
  public void close() {
    stopping = true;
    KafkaConsumer<byte[], byte[]> c = consumer;
    if (c != null) {
      c.wakeup();
    }
    synchronized (pauses) {
      pauses.notifyAll();
    }
    Thread t;
    synchronized (this) {
      t = consumerThread;
    }
    if (t != null) {
      try {
        t.join(3000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    closeProducer();
  }

  Map<String, Long> versions() {
    Map<String, Long> out = new HashMap<>();
    for (TopicRouter t : followed.values()) {
      out.put(t.topic, t.version());
    }
    return out;
  }
}
