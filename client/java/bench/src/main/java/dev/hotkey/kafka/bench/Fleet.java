package dev.hotkey.kafka.bench;

import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A fleet of Java producers in one JVM, as hotkey-loadgen is one C++ producer: each of
 * {@code --producers} threads has its own {@code KafkaProducer} (so, with the library, its own
 * client, sketch, reporter and list subscription, as separate services would) and sends its
 * share of {@code --rate} on loadgen's schedule and workload (scripts/java-fleet-bench.sh runs
 * it beside the C++ fleet; docs/BENCHMARKS.md "Java client"). {@code --mode hotkey}: the three
 * configuration lines; {@code naive}: a plain {@code KafkaProducer} (built-in partitioner).
 * Prints a JSON summary: records sent, delivered, failed, process CPU seconds.
 */
public final class Fleet {
  private Fleet() {}

  public static void main(String[] args) throws Exception {
    String bootstrap = null;
    String topic = null;
    String mode = "hotkey";
    String url = "";
    String idPrefix = "java-fleet";
    String jsonOut = null;
    int producers = 4;
    double rate = 2000;
    double duration = 30;
    long startAtMs = 0;
    int keys = 100_000;
    double zipf = 0;
    double hotShare = 0.4;
    int valueBytes = 100;
    long seed = 1;
    List<String> clientProps = new ArrayList<>();
    for (int i = 0; i < args.length; i += 2) {
      String v = i + 1 < args.length ? args[i + 1] : null;
      if (v == null) {
        throw new IllegalArgumentException(args[i] + " needs a value");
      }
      switch (args[i]) {
        case "--bootstrap" -> bootstrap = v;
        case "--topic" -> topic = v;
        case "--mode" -> mode = v;
        case "--coordinator" -> url = v;
        case "--producer-id" -> idPrefix = v;
        case "--json-out" -> jsonOut = v;
        case "--producers" -> producers = Integer.parseInt(v);
        case "--rate" -> rate = Double.parseDouble(v);
        case "--duration" -> duration = Double.parseDouble(v);
        case "--start-at-ms" -> startAtMs = Long.parseLong(v);
        case "--keys" -> keys = Integer.parseInt(v);
        case "--zipf" -> zipf = Double.parseDouble(v);
        case "--hot-share" -> hotShare = Double.parseDouble(v);
        case "--value-bytes" -> valueBytes = Integer.parseInt(v);
        case "--seed" -> seed = Long.parseLong(v);
        case "--client-prop" -> clientProps.add(v);
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    if (bootstrap == null || topic == null || !(mode.equals("hotkey") || mode.equals("naive"))) {
      System.err.println("usage: Fleet --bootstrap B --topic T --mode hotkey|naive "
          + "[--coordinator URL] [--producers N] [--rate R] [--duration S] [--start-at-ms T] "
          + "[--keys N] [--zipf Z] [--hot-share F] [--value-bytes N] [--seed N] "
          + "[--producer-id P] [--client-prop K=V]... [--json-out FILE]");
      System.exit(2);
    }
    if (startAtMs == 0) {
      startAtMs = System.currentTimeMillis() + 1000;
    }
    AtomicLong sent = new AtomicLong();
    AtomicLong delivered = new AtomicLong();
    AtomicLong failed = new AtomicLong();
    List<Thread> threads = new ArrayList<>();
    byte[] value = new byte[valueBytes];
    java.util.Arrays.fill(value, (byte) 'x');
    for (int p = 0; p < producers; p++) {
      Properties props = new Properties();
      props.put("bootstrap.servers", bootstrap);
      props.put("key.serializer", StringSerializer.class.getName());
      props.put("value.serializer", ByteArraySerializer.class.getName());
      props.put("client.id", idPrefix + "-p" + p);
      if (mode.equals("hotkey")) {
        props.put("partitioner.class", HotkeyPartitioner.class.getName());
        props.put("interceptor.classes", HotkeyInterceptor.class.getName());
        props.put("hotkey.coordinator.url", url);
        props.put("hotkey.producer.id", idPrefix + "-p" + p);
      }
      for (String kv : clientProps) {
        int eq = kv.indexOf('=');
        props.put(kv.substring(0, eq), kv.substring(eq + 1));
      }
      Workload workload = new Workload(seed + p, keys, zipf, hotShare);
      double perRate = rate / producers;
      long records = (long) (perRate * duration);
      long startNs = System.nanoTime()
          + TimeUnit.MILLISECONDS.toNanos(startAtMs - System.currentTimeMillis());
      KafkaProducer<String, byte[]> producer = new KafkaProducer<>(props);
      String target = topic;
      Thread t = new Thread(() -> {
        try (producer) {
          for (long i = 0; i < records; i++) {
            long due = startNs + (long) (i * 1e9 / perRate);
            long wait = due - System.nanoTime();
            if (wait > 0) {
              LockSupport.parkNanos(wait);
            }
            producer.send(new ProducerRecord<>(target, workload.next(), value), (md, e) -> {
              if (e == null) {
                delivered.incrementAndGet();
              } else {
                failed.incrementAndGet();
              }
            });
            sent.incrementAndGet();
          }
          producer.flush();
        }
      }, "fleet-p" + p);
      threads.add(t);
    }
    for (Thread t : threads) {
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }
    double cpu = ((com.sun.management.OperatingSystemMXBean)
        ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime() / 1e9;
    String json = String.format(java.util.Locale.ROOT,
        "{\"mode\":\"%s\",\"topic\":\"%s\",\"producers\":%d,\"records_sent\":%d,"
            + "\"records_delivered\":%d,\"records_failed\":%d,\"cpu_s\":%.3f}%n",
        mode, topic, producers, sent.get(), delivered.get(), failed.get(), cpu);
    if (jsonOut != null) {
      Files.writeString(Path.of(jsonOut), json, StandardCharsets.UTF_8);
    } else {
      System.out.print(json);
    }
    System.exit(failed.get() == 0 ? 0 : 3);
  }
}
