package dev.hotkey.kafka.bench;

import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Producer records per CPU-second, a plain {@code KafkaProducer} against one configured with the
 * library, on a rate-limited workload to a real broker (issue 28; scripts/java-fleet-bench.sh
 * --scenarios cpu; docs/BENCHMARKS.md "Java client"). One sending thread at {@code --rate}
 * records/s, keys Zipf({@code --zipf}) over {@code --keys} (Zipf 1 over 100,000 keys puts its
 * top keys above a partition's fair share, so the coordinator lists them and the library salts
 * them). Phases alternate plain / library (ABBA order per round) in this one JVM; each phase
 * creates its producer, sends for {@code --warmup-s} unmeasured, then counts the records sent
 * and the process CPU time (every thread: sender, I/O, reporter, list subscriber, GC, JIT)
 * until the end of the phase including the flush. Prints each phase, the medians and their
 * ratio.
 */
public final class CpuPerRecord {
  private CpuPerRecord() {}

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
    int keys = 100_000;
    double zipf = 1.0;
    int valueBytes = 100;
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
        case "--keys" -> keys = Integer.parseInt(v);
        case "--zipf" -> zipf = Double.parseDouble(v);
        case "--value-bytes" -> valueBytes = Integer.parseInt(v);
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    if (bootstrap == null || topic == null || url.isEmpty() || args.length % 2 != 0) {
      System.err.println("usage: CpuPerRecord --bootstrap B --topic T --coordinator URL "
          + "[--rate R] [--phase-s S] [--warmup-s S] [--rounds N] [--keys N] [--zipf Z] "
          + "[--value-bytes N]");
      System.exit(2);
    }
    byte[] value = new byte[valueBytes];
    Arrays.fill(value, (byte) 'x');
    Workload workload = new Workload(1, keys, zipf, 0);
    List<Double> plain = new ArrayList<>();
    List<Double> library = new ArrayList<>();
    List<Double> paired = new ArrayList<>();
    // Round 0 warms the JIT for both and is not counted.
    for (int r = 0; r <= rounds; r++) {
      boolean libraryFirst = r % 2 == 1;
      double[] perCpu = new double[2];
      for (int k = 0; k < 2; k++) {
        boolean withLibrary = (k == 0) == libraryFirst;
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        if (withLibrary) {
          p.put("partitioner.class", HotkeyPartitioner.class.getName());
          p.put("interceptor.classes", HotkeyInterceptor.class.getName());
          p.put("hotkey.coordinator.url", url);
        }
        AtomicLong failed = new AtomicLong();
        long records = 0;
        long cpu0 = 0;
        long counted0 = 0;
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(p)) {
          long start = System.nanoTime();
          long total = (long) (rate * phaseS);
          long warm = (long) (rate * warmupS);
          for (long i = 0; i < total; i++) {
            if (i == warm) {
              cpu0 = processCpuNs();
              counted0 = i;
            }
            long wait = start + (long) (i * 1e9 / rate) - System.nanoTime();
            if (wait > 0) {
              LockSupport.parkNanos(wait);
            }
            producer.send(new ProducerRecord<>(topic, workload.next(), value), (md, e) -> {
              if (e != null) {
                failed.incrementAndGet();
              }
            });
            records = i + 1;
          }
          producer.flush();
          long cpu = processCpuNs() - cpu0;
          perCpu[withLibrary ? 1 : 0] = (records - counted0) / (cpu / 1e9);
          System.out.printf(Locale.ROOT, "round %d %-8s %7d records  %6.3f CPU s  %8.0f records"
              + "/CPU-s%s%n", r, withLibrary ? "library" : "plain", records - counted0, cpu / 1e9,
              perCpu[withLibrary ? 1 : 0], r == 0 ? "  (warm-up, not counted)" : "");
        }
        if (failed.get() > 0) {
          System.out.println("  " + failed.get() + " records failed");
        }
      }
      if (r > 0) {
        plain.add(perCpu[0]);
        library.add(perCpu[1]);
        paired.add(perCpu[1] / perCpu[0]);
      }
    }
    double mp = median(plain);
    double ml = median(library);
    System.out.printf(Locale.ROOT, "records per CPU-second (median of %d phases): plain %.0f, "
        + "library %.0f: ratio %.3f (median of the rounds' ratios %.3f; goal >= 0.9)%n", rounds,
        mp, ml, ml / mp, median(paired));
  }

  private static double median(List<Double> xs) {
    double[] s = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }
}
