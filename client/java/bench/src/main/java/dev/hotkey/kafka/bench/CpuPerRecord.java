package dev.hotkey.kafka.bench;

import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Producer records per CPU-second, a plain {@code KafkaProducer} against one configured with the
 * library, on a rate-limited workload to a real broker (issue 28; scripts/java-fleet-bench.sh
 * --scenarios cpu; docs/BENCHMARKS.md "Java client"). One sending thread at {@code --rate}
 * records/s, keys Zipf({@code --zipf}) over {@code --keys} (Zipf 1 over 100,000 keys puts its
 * top keys above a partition's fair share, so the coordinator lists them and the library salts
 * them). Phases alternate plain / library (ABBA order per round) in this one JVM, or with
 * {@code --jvm-per-phase true} each in a JVM of its own (no JIT work crossing phases); each phase
 * creates its producer, sends for {@code --warmup-s} unmeasured, then counts the records sent
 * (the first {@code --warmup-rounds} rounds, 3 by default, are not counted) and the process CPU
 * time (every thread: sender, I/O, reporter, list subscriber, GC, JIT) until the end of the
 * phase including the flush. Prints each phase (with the share of its records sent more than
 * 5 ms late, its CPU per record by thread, and the JVM's GC and JIT time in it), the medians and their ratio over all rounds and over the
 * rounds whose two phases kept to their schedule.
 */
public final class CpuPerRecord {
  // A record sent more than this after its time means the sender was not running when due: it
  // then sends a burst, which batches better and costs less CPU per record, so a phase with
  // more than MAX_LATE_SHARE of such records measures the machine's scheduling as much as the
  // configuration: the rounds on schedule get a figure of their own.
  private static final long LATE_NS = 5_000_000;
  private static final double MAX_LATE_SHARE = 0.01;

  private CpuPerRecord() {}

  /** CPU ns so far of every live Java thread, by id; names by id into {@code names}. */
  private static Map<Long, Long> threadCpuNs(Map<Long, String> names) {
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    Map<Long, Long> out = new HashMap<>();
    for (ThreadInfo ti : mx.getThreadInfo(mx.getAllThreadIds())) {
      if (ti == null) {
        continue;
      }
      long ns = mx.getThreadCpuTime(ti.getThreadId());
      if (ns >= 0) {
        out.put(ti.getThreadId(), ns);
        names.put(ti.getThreadId(), ti.getThreadName());
      }
    }
    return out;
  }

  // Where a thread's CPU is counted: the sending thread, Kafka's sender (I/O), the library's
  // threads, the rest of the Java threads; "vm" (GC, JIT, threads that ended) is the rest of
  // the process's time.
  private static final String[] GROUPS =
      {"send", "kafka-io", "hotkey-reporter", "hotkey-lists", "other", "vm"};

  private static String group(String name) {
    if (name.equals("main")) {
      return "send";
    }
    if (name.startsWith("kafka-producer-network-thread")) {
      return "kafka-io";
    }
    if (name.startsWith("hotkey-report")) {
      return "hotkey-reporter";
    }
    if (name.startsWith("hotkey-lists")) {
      return "hotkey-lists";
    }
    return "other";
  }

  /** Young and old collections so far, and their time in ms, summed over the collectors. */
  private static long[] gc() {
    long[] out = new long[2];
    for (GarbageCollectorMXBean b : ManagementFactory.getGarbageCollectorMXBeans()) {
      out[0] += Math.max(0, b.getCollectionCount());
      out[1] += Math.max(0, b.getCollectionTime());
    }
    return out;
  }

  private static long jitMs() {
    return ManagementFactory.getCompilationMXBean().getTotalCompilationTime();
  }

  private static long processCpuNs() {
    return ((com.sun.management.OperatingSystemMXBean)
        ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }

  public static void main(String[] args) throws Exception {
    String bootstrap = null;
    String topic = null;
    String url = "";
    double rate = 5000;
    double phaseS = 10;
    double warmupS = 2;
    int rounds = 6;
    int warmupRounds = 3;
    int keys = 100_000;
    double zipf = 1.0;
    int valueBytes = 100;
    List<String> clientProps = new ArrayList<>();
    boolean jvmPerPhase = false;
    String onePhase = null;
    int round = 0;
    for (int i = 0; i + 1 < args.length; i += 2) {
      String v = args[i + 1];
      switch (args[i]) {
        case "--bootstrap" -> bootstrap = v;
        case "--topic" -> topic = v;
        case "--coordinator" -> url = v;
        case "--rate" -> rate = Double.parseDouble(v);
        case "--phase-s" -> phaseS = Double.parseDouble(v);
        case "--warmup-s" -> warmupS = Double.parseDouble(v);
        case "--rounds" -> rounds = Integer.parseInt(v);
        case "--warmup-rounds" -> warmupRounds = Math.max(1, Integer.parseInt(v));
        case "--keys" -> keys = Integer.parseInt(v);
        case "--zipf" -> zipf = Double.parseDouble(v);
        case "--value-bytes" -> valueBytes = Integer.parseInt(v);
        case "--client-prop" -> clientProps.add(v);
        case "--jvm-per-phase" -> jvmPerPhase = Boolean.parseBoolean(v);
        case "--one-phase" -> onePhase = v;
        case "--round" -> round = Integer.parseInt(v);
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    if (bootstrap == null || topic == null || url.isEmpty() || args.length % 2 != 0) {
      System.err.println("usage: CpuPerRecord --bootstrap B --topic T --coordinator URL "
          + "[--rate R] [--phase-s S] [--warmup-s S] [--rounds N] [--warmup-rounds N] [--keys N] "
          + "[--zipf Z] "
          + "[--value-bytes N] [--client-prop K=V]... [--jvm-per-phase true]");
      System.exit(2);
    }
    byte[] value = new byte[valueBytes];
    Arrays.fill(value, (byte) 'x');
    if (warmupS >= phaseS) {
      // The warm-up is the start of the phase: with nothing left to count, the phase would
      // count its whole JVM from start-up instead.
      System.err.println("CpuPerRecord: --warmup-s (" + warmupS + ") must be below --phase-s ("
          + phaseS + "): the warm-up is the first part of each phase");
      System.exit(2);
    }
    Settings set = new Settings(bootstrap, topic, url, rate, phaseS, warmupS, keys, zipf, value,
        clientProps);
    if (onePhase != null) {
      // A child of --jvm-per-phase: one phase in this fresh JVM, its figures on the last line.
      Phase ph = runPhase(onePhase.equals("library"), set, new Workload(1, keys, zipf, 0), round);
      StringBuilder out = new StringBuilder(String.format(Locale.ROOT, "PHASE %.3f %.6f",
          ph.perCpu, ph.lateShare));
      for (double u : ph.usPerRecord) {
        out.append(String.format(Locale.ROOT, " %.6f", u));
      }
      System.out.println(out);
      return;
    }
    Workload workload = new Workload(1, keys, zipf, 0);
    List<Double> plain = new ArrayList<>();
    List<Double> library = new ArrayList<>();
    List<Double> paired = new ArrayList<>();
    List<Double> allPlain = new ArrayList<>();
    List<Double> allLibrary = new ArrayList<>();
    Map<String, List<Double>> byThread = new TreeMap<>();
    // In one JVM, the first warmupRounds rounds (numbered up to 0) warm the JIT for both, not
    // counted: the compilers kept working through the first three rounds (0.9 s of JIT time in
    // the second, 0.2 s in the third), and a phase's JIT time is in its process CPU time. With
    // a JVM per phase every phase warms up on its own (--warmup-s), and no round is a warm-up.
    for (int r = jvmPerPhase ? 1 : 1 - warmupRounds; r <= rounds; r++) {
      boolean libraryFirst = Math.floorMod(r, 2) == 1;
      double[] perCpu = new double[2];
      boolean onTime = true;
      for (int k = 0; k < 2; k++) {
        boolean withLibrary = (k == 0) == libraryFirst;
        Phase ph = jvmPerPhase ? childPhase(withLibrary, args, r)
            : runPhase(withLibrary, set, workload, r);
        perCpu[withLibrary ? 1 : 0] = ph.perCpu;
        onTime &= ph.lateShare <= MAX_LATE_SHARE;
        if (r > 0) {
          for (int g = 0; g < GROUPS.length; g++) {
            byThread.computeIfAbsent((withLibrary ? "library " : "plain ") + GROUPS[g],
                x -> new ArrayList<>()).add(ph.usPerRecord[g]);
          }
        }
      }
      if (r > 0) {
        allPlain.add(perCpu[0]);
        allLibrary.add(perCpu[1]);
      }
      if (r > 0 && !onTime) {
        System.out.println("  round " + r + " off schedule: counted in the all-rounds figure only");
      }
      if (r > 0 && onTime) {
        plain.add(perCpu[0]);
        library.add(perCpu[1]);
        paired.add(perCpu[1] / perCpu[0]);
      }
    }
    StringBuilder split = new StringBuilder("CPU us/record by thread, medians over the rounds:");
    for (String kind : new String[] {"plain", "library"}) {
      split.append("\n  ").append(String.format(Locale.ROOT, "%-8s", kind));
      for (String g : GROUPS) {
        split.append(String.format(Locale.ROOT, " %s %.2f", g, median(byThread.get(kind + " " + g))));
      }
    }
    System.out.println(split);
    System.out.printf(Locale.ROOT, "records per CPU-second, all %d rounds (medians): plain %.0f, "
        + "library %.0f: ratio %.3f%n", allPlain.size(), median(allPlain), median(allLibrary),
        median(allLibrary) / median(allPlain));
    if (plain.isEmpty()) {
      System.out.println("no round kept to its schedule: no figure");
      return;
    }
    double mp = median(plain);
    double ml = median(library);
    System.out.printf(Locale.ROOT, "records per CPU-second (median of %d rounds on schedule): plain %.0f, "
        + "library %.0f: ratio %.3f (median of the rounds' ratios %.3f; goal >= 0.9)%n", plain.size(),
        mp, ml, ml / mp, median(paired));
  }

  private record Settings(String bootstrap, String topic, String url, double rate, double phaseS,
      double warmupS, int keys, double zipf, byte[] value, List<String> clientProps) {}

  /** One phase's figures: records per CPU-second, the share sent late, CPU us/record by group. */
  private record Phase(double perCpu, double lateShare, double[] usPerRecord) {}

  /**
   * Runs one phase in a JVM of its own (this class with --one-phase, the same class path and
   * JVM options), so that neither configuration's JIT work or deoptimisations land in the
   * other's phases, as in a producer process, which runs one configuration. Its output is
   * printed as it comes; its last line carries the figures.
   */
  private static Phase childPhase(boolean withLibrary, String[] args, int round) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(ProcessHandle.current().info().command().orElse("java"));
    cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(CpuPerRecord.class.getName());
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].equals("--jvm-per-phase")) {
        cmd.add(args[i]);
        cmd.add(args[i + 1]);
      }
    }
    cmd.addAll(List.of("--one-phase", withLibrary ? "library" : "plain", "--round",
        Integer.toString(round)));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    Phase out = null;
    try (java.io.BufferedReader in = new java.io.BufferedReader(
        new java.io.InputStreamReader(p.getInputStream(), java.nio.charset.StandardCharsets.UTF_8))) {
      for (String line; (line = in.readLine()) != null; ) {
        if (line.startsWith("PHASE ")) {
          String[] f = line.substring(6).trim().split(" ");
          double[] us = new double[GROUPS.length];
          for (int g = 0; g < GROUPS.length; g++) {
            us[g] = Double.parseDouble(f[2 + g]);
          }
          out = new Phase(Double.parseDouble(f[0]), Double.parseDouble(f[1]), us);
        } else {
          System.out.println(line);
        }
      }
    }
    if (p.waitFor() != 0 || out == null) {
      throw new IllegalStateException("the phase's JVM failed (exit " + p.exitValue() + ")");
    }
    return out;
  }

  private static Phase runPhase(boolean withLibrary, Settings set, Workload workload, int r)
      throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", set.bootstrap);
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", ByteArraySerializer.class.getName());
    if (withLibrary) {
      p.put("partitioner.class", HotkeyPartitioner.class.getName());
      p.put("interceptor.classes", HotkeyInterceptor.class.getName());
      p.put("hotkey.coordinator.url", set.url);
      for (String kv : set.clientProps) {
        int eq = kv.indexOf('=');
        p.put(kv.substring(0, eq), kv.substring(eq + 1));
      }
    }
    final double rate = set.rate;
    AtomicLong failed = new AtomicLong();
    long records = 0;
    long cpu0 = 0;
    long counted0 = 0;
    long late = 0;
    Map<Long, Long> threads0 = new HashMap<>();
    long[] gc0 = new long[2];
    long jit0 = 0;
    double perCpu;
    double lateShare;
    double[] usPerRecord = new double[GROUPS.length];
    try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(p)) {
      long start = System.nanoTime();
      long total = (long) (rate * set.phaseS);
      long warm = (long) (rate * set.warmupS);
      for (long i = 0; i < total; i++) {
        if (i == warm) {
          cpu0 = processCpuNs();
          threads0 = threadCpuNs(new HashMap<>());
          gc0 = gc();
          jit0 = jitMs();
          counted0 = i;
        }
        long wait = start + (long) (i * 1e9 / rate) - System.nanoTime();
        if (wait > 0) {
          LockSupport.parkNanos(wait);
        } else if (i >= warm && wait < -LATE_NS) {
          late++;
        }
        producer.send(new ProducerRecord<>(set.topic, workload.next(), set.value), (md, e) -> {
          if (e != null) {
            failed.incrementAndGet();
          }
        });
        records = i + 1;
      }
      producer.flush();
      long cpu = processCpuNs() - cpu0;
      Map<Long, String> names = new HashMap<>();
      Map<Long, Long> threads1 = threadCpuNs(names);
      perCpu = (records - counted0) / (cpu / 1e9);
      lateShare = (double) late / (records - counted0);
      System.out.printf(Locale.ROOT, "round %d %-8s %7d records  %6.3f CPU s  %8.0f records"
          + "/CPU-s  %5.1f%% late%s%n", r, withLibrary ? "library" : "plain",
          records - counted0, cpu / 1e9, perCpu, 100 * lateShare,
          r <= 0 ? "  (warm-up, not counted)" : "");
      double[] us = new double[GROUPS.length];
      double counted = 0;
      for (Map.Entry<Long, Long> t : threads1.entrySet()) {
        double d = (t.getValue() - threads0.getOrDefault(t.getKey(), 0L)) / 1e3;
        us[Arrays.asList(GROUPS).indexOf(group(names.get(t.getKey())))] += d;
        counted += d;
      }
      us[GROUPS.length - 1] = cpu / 1e3 - counted;
      StringBuilder line = new StringBuilder("  CPU us/record by thread:");
      for (int g = 0; g < GROUPS.length; g++) {
        usPerRecord[g] = us[g] / (records - counted0);
        line.append(String.format(Locale.ROOT, " %s %.2f", GROUPS[g], usPerRecord[g]));
      }
      // How the phase's records were batched (Kafka's own metrics, averaged over the
      // producer's life): more, smaller batches cost the I/O thread more per record.
      for (Map.Entry<MetricName, ? extends Metric> m : producer.metrics().entrySet()) {
        String n = m.getKey().name();
        if (m.getKey().group().equals("producer-metrics")
            && (n.equals("records-per-request-avg") || n.equals("batch-size-avg"))) {
          line.append(String.format(Locale.ROOT, " %s %.1f", n,
              ((Number) m.getValue().metricValue()).doubleValue()));
        }
      }
      long[] gc1 = gc();
      line.append(String.format(Locale.ROOT, "  (vm: %d GCs %d ms, JIT %d ms)",
          gc1[0] - gc0[0], gc1[1] - gc0[1], jitMs() - jit0));
      System.out.println(line);
    }
    if (failed.get() > 0) {
      System.out.println("  " + failed.get() + " records failed");
    }
    return new Phase(perCpu, lateShare, usPerRecord);
  }

  private static double median(List<Double> xs) {
    double[] s = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }
}
