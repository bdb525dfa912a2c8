package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyStats;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.kafka.clients.producer.Partitioner;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.PartitionInfo;

/**
 * What {@code dev.hotkey.kafka.HotkeyPartitioner} does (it is this class under its public
 * name: a subclass, not a delegate, so the send path has no extra call): every keyed record not on the topic's hot-key list goes exactly
 * where Kafka's built-in partitioner sends it (murmur2 of the serialized key, masked to 31
 * bits, modulo the topic's partition count); a listed key takes a salt of its verified table by
 * weight, with the C++ client's smooth weighted round robin (route mode: the record keeps its
 * key). Records the interceptor rekeyed are placed by their salted key, like any cold key.
 * Every keyed record is counted and sampled for the reports here, where its partition is known.
 */
public abstract class PartitionerCore implements Partitioner {
  private HotkeyClient client;
  private Settings.SaltPolicy policy;
  private boolean rekey;
  private int stickyBatchSize = 16384;
  // Set by the first onNewBatch (kafka-clients 3.x): only then do the out-of-line paths look
  // for a repeated call. A plain field: the sending thread that set it reads it right after;
  // another thread's first repeat may miss it, and is then counted (cold keys never miss: the
  // sampler's own mark catches them).
  private boolean batchHook;

  // The keys the table's filter may hold (and records the interceptor may have rekeyed) are
  // placed out of line, through a MethodHandle in an instance field, which C2 cannot inline (as
  // Sampler does for sample()). Inlined, withList (the salt table's lookup and pick, the rekey
  // lookup) made partition()'s compiled code bigger and every cold record slower: CpuCost,
  // 10 pairs of JVMs, cold key 1.315x the built-in partitioner inlined, 1.23x out of line; a
  // listed key pays ~3 ns for the call (docs/BENCHMARKS.md "Java client").
  private static final MethodHandle WITH_LIST;

  static {
    try {
      WITH_LIST = MethodHandles.lookup().findVirtual(PartitionerCore.class, "withList",
          MethodType.methodType(int.class, TopicRouter.class, RoutingTable.class, Object.class,
              byte[].class, byte[].class, int.class, int.class, boolean.class));
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final MethodHandle withList = WITH_LIST;

  @Override
  public void configure(Map<String, ?> configs) {
    InterceptorCore.markHotkeyPropertiesUsed(configs);
    client = HotkeyClient.acquire(configs);
    policy = client.config.saltPolicy;
    rekey = client.config.routingMode == Settings.RoutingMode.REKEY;
    if (rekey && !interceptorConfigured(configs.get("interceptor.classes"))) {
      client.log.partitionerAlone();
    }
    Object batch = configs.get("batch.size");
    if (batch != null) {
      try {
        stickyBatchSize = Math.max(1, Integer.parseInt(batch.toString().trim()));
      } catch (NumberFormatException e) {
        stickyBatchSize = 16384;
      }
    }
  }

  /**
   * The statistics of the client this partitioner shares with the producer's other plugin
   * (docs/CLIENT-JAVA.md "Statistics"); all zero before configure() and after close().
   */
  public HotkeyStats stats() {
    HotkeyClient c = client;
    return c != null ? c.stats()
        : new HotkeyStats("", 0, 0, 0, java.util.Map.of(), 0, 0, 0, 0, false, java.util.List.of());
  }

  /**
   * The client this partitioner shares with the producer's interceptor (null once closed).
   * Internal: for this library's tests and benchmarks.
   */
  public HotkeyClient client() {
    return client;
  }

  // Kept small so the JIT inlines the cold path whole into the producer's send(): the listed
  // keys, keyless records and rekeyed records go out of line.
  @Override
  public int partition(String topic, Object key, byte[] keyBytes, Object value, byte[] valueBytes,
      Cluster cluster) {
    final int n = cluster.partitionsForTopic(topic).size();
    final TopicRouter r = client.topic(topic);
    r.observePartitions(n);
    if (keyBytes == null) {
      return keyless(r, cluster, n, valueBytes);
    }
    final int hash = Hashes.murmur2(keyBytes) & 0x7fffffff;
    final RoutingTable t = r.tableFor(n);
    // A key the table's filter rules out is cold, and is placed here, unless (rekey mode) it
    // looks like a salted key the interceptor made; only those two kinds go out of line.
    if (t != null) {
      final boolean maybeRekeyed =
          rekey && !t.empty && InterceptorCore.maybeSalted(keyBytes, t.separator);
      if (maybeRekeyed || t.mayContain(hash)) {
        try {
          return (int) withList.invokeExact(this, r, t, key, keyBytes, valueBytes, hash, n,
              maybeRekeyed);
        } catch (RuntimeException | Error e) {
          throw e;
        } catch (Throwable e) { // withList throws nothing checked
          throw new IllegalStateException(e);
        }
      }
    }
    final int partition = hash % n;
    r.sampler.record(keyBytes, partition, false);
    return partition;
  }

  private int keyless(TopicRouter r, Cluster cluster, int n, byte[] valueBytes) {
    int repeat = batchHook ? r.sampler.takeRepeat() : -1;
    if (repeat >= 0 && repeat < n) {
      return repeat; // kafka-clients 3.x asking again for the same record: same answer
    }
    r.sampler.recordNull();
    return sticky(r, cluster, n, valueBytes == null ? 0 : valueBytes.length);
  }

  /** Whether interceptor.classes (a list, or comma-separated names) holds the hotkey one. */
  static boolean interceptorConfigured(Object classes) {
    if (classes == null) {
      return false;
    }
    Iterable<?> items = classes instanceof List ? (List<?>) classes
        : java.util.Arrays.asList(classes.toString().split(","));
    for (Object o : items) {
      if (PluginClasses.is(o, InterceptorCore.class)) {
        return true;
      }
    }
    return false;
  }

  /**
   * kafka-clients 3.x (the hook is gone in 4.0, so no {@code @Override}): the record just
   * partitioned opens a new batch, and KafkaProducer calls partition() again for it at once,
   * on this thread. That second call is answered without counting the record again: a cold or
   * rekeyed record gets the same partition (its key's), a listed key in route mode and a
   * record without a key get prevPartition back (the round robin does not advance twice), and
   * neither is counted (a rekeyed record's salted key is never counted as a key of its own).
   */
  public void onNewBatch(String topic, Cluster cluster, int prevPartition) {
    HotkeyClient c = client;
    batchHook = true;
    if (c != null) {
      c.topic(topic).sampler.markRepeat(prevPartition);
    }
  }

  // maybeRekeyed: rekey mode, and the key reads as KEY + separator + digits (partition() tested).
  private int withList(TopicRouter r, RoutingTable t, Object key, byte[] keyBytes,
      byte[] valueBytes, int hash, int n, boolean maybeRekeyed) {
    int partition = hash % n;
    // A record the interceptor rekeyed: counted under its logical key, placed by its salted key.
    if (maybeRekeyed) {
      byte[] logical = InterceptorCore.takeRekeyed(key);
      if (logical != null) {
        r.sampler.record(logical, partition, true);
        return partition;
      }
    }
    boolean salted = false;
    RoutingTable.Entry e = t.find(keyBytes, hash);
    if (e != null) {
      int repeat = batchHook ? r.sampler.takeRepeat() : -1;
      if (repeat >= 0 && e.hasPartition(repeat)) {
        return repeat; // kafka-clients 3.x asking again for the same record: same answer
      }
      int idx;
      switch (policy) {
        case VALUE_HASH:
          idx = t.pickBy(e, valueBytes == null ? 0 : Hashes.murmur2(valueBytes));
          break;
        case RANDOM:
          idx = t.pickBy(e, ThreadLocalRandom.current().nextInt());
          break;
        default:
          idx = t.pickWrr(e);
      }
      int p = e.partitions[idx];
      if (p >= 0 && p < n) {
        partition = p;
        salted = true;
      }
    }
    r.sampler.record(keyBytes, partition, salted);
    return partition;
  }

  /**
   * Records without a key. Kafka 4 places them with its built-in sticky partitioner only when
   * no partitioner.class is set (a custom partitioner is called for them and may not decline),
   * so this reproduces its behaviour: stay on one partition until batch.size bytes went there,
   * then move to a random available partition (all partitions when none is available).
   */
  private int sticky(TopicRouter r, Cluster cluster, int n, int bytes) {
    int p = r.stickyPartition;
    if (p < 0 || p >= n || r.stickyBytes.addAndGet(bytes) >= stickyBatchSize) {
      synchronized (r.stickyLock) {
        if (p == r.stickyPartition) {
          List<PartitionInfo> available = cluster.availablePartitionsForTopic(r.topic);
          int next;
          if (available.isEmpty()) {
            next = ThreadLocalRandom.current().nextInt(n);
          } else {
            next = available.get(ThreadLocalRandom.current().nextInt(available.size()))
                .partition();
          }
          r.stickyBytes.set(0);
          r.stickyPartition = next;
        }
        p = r.stickyPartition;
      }
    }
    return p;
  }

  @Override
  public void close() {
    if (client != null) {
      client.release();
      client = null;
    }
  }
}
