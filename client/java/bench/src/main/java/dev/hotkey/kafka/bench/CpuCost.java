package dev.hotkey.kafka.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntSupplier;

/**
 * The SendPath benchmarks measured in thread CPU time instead of wall time, the variants
 * interleaved round by round: on a shared machine (other processes taking the cores) wall-clock
 * JMH scores swing by 2-3x, while the CPU time a thread spends per operation does not count the
 * time it waits for a core. Prints each variant's median ns per operation and the ratios the
 * goals name. Usage: java -cp ... dev.hotkey.kafka.bench.CpuCost [rounds] [ops per round] [--every-record]
 */
public final class CpuCost {
  private CpuCost() {}

  public static void main(String[] args) throws Exception {
    boolean everyRecordToo = args.length > 2 && args[2].equals("--every-record");
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 21;
    int ops = args.length > 1 ? Integer.parseInt(args[1]) : 2_000_000;
    SendPath route = new SendPath();
    route.mode = "route";
    route.setup();
    SendPath rekey = new SendPath();
    rekey.mode = "rekey";
    rekey.setup();
    Map<String, IntSupplier> variants = new LinkedHashMap<>();
    variants.put("builtInColdKey", route::builtInColdKey);
    variants.put("route.partition hot key", route::hotkeyHotKey);
    variants.put("route.interceptor+partition cold key", route::interceptorAndPartitionerColdKey);
    variants.put("route.interceptor+partition hot key", route::interceptorAndPartitionerHotKey);
    variants.put("rekey.interceptor+partition cold key", rekey::interceptorAndPartitionerColdKey);
    variants.put("rekey.interceptor+partition hot key", rekey::interceptorAndPartitionerHotKey);
    variants.put("route.partition cold key", route::hotkeyColdKey);
    // --every-record: also a producer that samples every record (hotkey.sample.rate=1, and any
    // producer's first reporting window), the sketch updated per record. Off by default: the
    // variants share partition()'s compiled code and profile, and these would make the default
    // ones' profile say that sampling is frequent, which no producer at the adaptive rate sees.
    SendPath everyRecord = null;
    if (everyRecordToo) {
      everyRecord = new SendPath();
      everyRecord.mode = "route";
      everyRecord.sampleRate = "1";
      everyRecord.setup();
      variants.put("route.partition cold key, rate 1", everyRecord::hotkeyColdKey);
      variants.put("route.partition hot key, rate 1", everyRecord::hotkeyHotKey);
    }
    // murmur2 alone, the same keys through Kafka's Utils.murmur2 and the library's (which
    // reads four bytes in one load): the part of partition() both sides do.
    byte[][] keys = new byte[4096][];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = ("customer-" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }
    int[] next = new int[1];
    variants.put("murmur2, Kafka's Utils",
        () -> org.apache.kafka.common.utils.Utils.murmur2(keys[next[0]++ & 4095]));
    variants.put("murmur2, the library's", () -> dev.hotkey.kafka.internals.Hashes.murmur2(keys[next[0]++ & 4095]));
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    Map<String, List<Double>> results = new LinkedHashMap<>();
    int sink = 0;
    for (int r = -3; r < rounds; r++) { // three warm-up rounds
      for (Map.Entry<String, IntSupplier> v : variants.entrySet()) {
        IntSupplier f = v.getValue();
        long t0 = mx.getCurrentThreadCpuTime();
        for (int i = 0; i < ops; i++) {
          sink += f.getAsInt();
        }
        long t1 = mx.getCurrentThreadCpuTime();
        if (r >= 0) {
          results.computeIfAbsent(v.getKey(), k -> new ArrayList<>())
              .add((double) (t1 - t0) / ops);
        }
      }
    }
    Map<String, Double> median = new LinkedHashMap<>();
    for (Map.Entry<String, List<Double>> e : results.entrySet()) {
      double[] xs = e.getValue().stream().mapToDouble(Double::doubleValue).sorted().toArray();
      median.put(e.getKey(), xs[xs.length / 2]);
      System.out.printf("%-40s %7.1f ns/op CPU (median of %d rounds; min %.1f, max %.1f)%n",
          e.getKey(), xs[xs.length / 2], xs.length, xs[0], xs[xs.length - 1]);
    }
    double base = median.get("builtInColdKey");
    System.out.printf("cold key / built-in: %.2fx (goal <= 1.3x)%n",
        median.get("route.partition cold key") / base);
    System.out.printf("hot key / built-in: %.2fx (goal <= 2x)%n",
        median.get("route.partition hot key") / base);
    System.out.printf("murmur2, the library's / Kafka's: %.2fx%n",
        median.get("murmur2, the library's") / median.get("murmur2, Kafka's Utils"));
    route.tearDown();
    rekey.tearDown();
    if (everyRecord != null) {
      everyRecord.tearDown();
    }
    System.out.println(Arrays.asList("sink", sink).size() > 0 ? "" : "");
  }
}
