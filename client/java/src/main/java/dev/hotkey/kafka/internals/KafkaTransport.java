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
          Set<TopicPartition> want = new HashSet<>();
          for (String t : followed.keySet()) {
            int p = Hashes.partitionFor(HashFamily.MURMUR2, t.getBytes(StandardCharsets.UTF_8), n);
            want.add(new TopicPartition(config.listsTopic, p));
          }
          if (!want.equals(assigned)) {
            Set<TopicPartition> added = new HashSet<>(want);
            added.removeAll(assigned);
            c.assign(new ArrayList<>(want));
            c.seekToBeginning(added);
            assigned = want;
          }
          for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(500))) {
            lastContact = System.nanoTime();
            onRecord(rec, n);
          }
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
          pause(backoff.nextMs());
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

  private void onRecord(ConsumerRecord<byte[], byte[]> rec, int partitions) {
    if (rec.key() == null) {
      return;
    }
    String topic = new String(rec.key(), StandardCharsets.UTF_8);
    TopicRouter t = followed.get(topic);
    if (t == null) {
      return;
    }
    if (rec.value() == null) {
      if (t.removeList()) {
        client.listUpdates.incrementAndGet();
      }
      return;
    }
    try {
      HotKeyList list = HotKeyList.parse(rec.value());
      if (!list.topic.equals(topic)) {
        client.listErrors.incrementAndGet();
        client.log.listRefused(topic, "the record holds the list of topic " + list.topic);
        return;
      }
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
