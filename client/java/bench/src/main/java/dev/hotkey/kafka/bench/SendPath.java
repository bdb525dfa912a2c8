package dev.hotkey.kafka.bench;

import dev.hotkey.kafka.internals.BenchLists;
import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.serialization.StringSerializer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The send-path cost per record: what KafkaProducer computes for a keyed record with its
 * built-in partitioner, against HotkeyPartitioner.partition() for a cold and a hot key (route
 * mode), and HotkeyInterceptor.onSend + partition() (rekey mode, what a producer configured
 * with both runs). The client is configured as in production: a coordinator URL (here a closed
 * port: the reporter and list threads run and back off), the adaptive sample rate, a list with
 * one hot key on 24 partitions.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class SendPath {
  static final String TOPIC = "orders";
  static final int PARTITIONS = 24;
  static final int KEYS = 4096;

  @Param({"route", "rekey"})
  public String mode;

  /** hotkey.sample.rate (CpuCost sets 1 for a producer that samples every record). */
  public String sampleRate = "auto";

  HotkeyPartitioner partitioner;
  HotkeyInterceptor interceptor;
  Cluster cluster;
  String[] keys = new String[KEYS];
  byte[][] keyBytes = new byte[KEYS][];
  byte[] hotBytes = "hot".getBytes(StandardCharsets.UTF_8);
  byte[] value = new byte[100];
  int next;

  @Setup(Level.Trial)
  public void setup() throws Exception {
    Node node = new Node(0, "127.0.0.1", 9092);
    List<PartitionInfo> parts = new ArrayList<>();
    for (int p = 0; p < PARTITIONS; p++) {
      parts.add(new PartitionInfo(TOPIC, p, node, new Node[] {node}, new Node[] {node}));
    }
    cluster = new Cluster("bench", List.of(node), parts, java.util.Set.of(), java.util.Set.of());
    for (int i = 0; i < KEYS; i++) {
      keys[i] = "customer-" + i;
      keyBytes[i] = keys[i].getBytes(StandardCharsets.UTF_8);
    }
    Map<String, Object> configs = new HashMap<>();
    configs.put("client.id", "bench-" + mode);
    configs.put("partitioner.class", HotkeyPartitioner.class.getName());
    configs.put("key.serializer", StringSerializer.class.getName());
    configs.put("hotkey.coordinator.url", "http://127.0.0.1:1");
    configs.put("hotkey.routing.mode", mode);
    configs.put("hotkey.sample.rate", sampleRate);
    // -Dhotkey.merge.contract=1: the writer of merge contract version 1 (default: the client's).
    String contract = System.getProperty("hotkey.merge.contract");
    if (contract != null) {
      configs.put("hotkey.merge.contract", contract);
    }
    interceptor = new HotkeyInterceptor();
    interceptor.configure(configs);
    partitioner = new HotkeyPartitioner();
    partitioner.configure(configs);
    BenchLists.publish(partitioner, TOPIC, PARTITIONS, "hot");
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    partitioner.close();
    interceptor.close();
  }

  private int nextKey() {
    next = (next + 1) & (KEYS - 1);
    return next;
  }

  @Benchmark
  public int builtInColdKey() {
    int i = nextKey();
    return BuiltInPartitioner.partitionForKey(keyBytes[i],
        cluster.partitionsForTopic(TOPIC).size());
  }

  @Benchmark
  public int hotkeyColdKey() {
    int i = nextKey();
    return partitioner.partition(TOPIC, keys[i], keyBytes[i], null, value, cluster);
  }

  @Benchmark
  public int hotkeyHotKey() {
    return partitioner.partition(TOPIC, "hot", hotBytes, null, value, cluster);
  }

  /** What a producer with both classes runs per record (cold key): onSend, then partition. */
  @Benchmark
  public int interceptorAndPartitionerColdKey() {
    int i = nextKey();
    ProducerRecord<Object, Object> r =
        interceptor.onSend(new ProducerRecord<>(TOPIC, keys[i], value));
    String k = (String) r.key();
    return partitioner.partition(TOPIC, k, keyBytes[i], null, value, cluster);
  }

  /** The same for the hot key: in rekey mode onSend builds the salted record. */
  @Benchmark
  public int interceptorAndPartitionerHotKey() {
    ProducerRecord<Object, Object> r = interceptor.onSend(new ProducerRecord<>(TOPIC, "hot", value));
    String k = (String) r.key();
    byte[] b = k == "hot" ? hotBytes : k.getBytes(StandardCharsets.UTF_8);
    return partitioner.partition(TOPIC, k, b, null, value, cluster);
  }
}
