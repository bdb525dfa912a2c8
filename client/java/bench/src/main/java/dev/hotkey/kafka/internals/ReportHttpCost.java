package dev.hotkey.kafka.internals;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The CPU a report's POST costs the reporter's thread in a fresh JVM, where a producer's
 * reporter lives: two reports a second are too few for the JIT to compile the HTTP client soon,
 * so most of a producer's reports run it interpreted or at tier 1-3 (docs/BENCHMARKS.md "The Java
 * reporter's HTTP client"). Sends N binary batch reports of 100 keys and 24 partitions (bodies
 * built before the clock starts) to a running coordinator, GAP_MS apart, and prints the
 * thread's CPU per request and the process's CPU (JIT and GC included) over the run.
 *
 * <p>Usage: {@code ReportHttpCost URL N GAP_MS}. In package dev.hotkey.kafka.internals for the
 * package-private Http, so the same class measures any build of the client jar since the
 * internals moved there (jars before that have Http in dev.hotkey.kafka).
 */
public final class ReportHttpCost {
  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: ReportHttpCost URL N GAP_MS");
      System.exit(2);
    }
    String url = args[0];
    int n = Integer.parseInt(args[1]);
    long gapMs = Long.parseLong(args[2]);
    List<byte[]> bodies = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Report r = new Report();
      r.producer = "report-http-cost";
      r.topic = "orders";
      r.partitions = 24;
      r.windowMs = 500;
      r.total = 2500;
      r.partitionCounts = new long[24];
      r.seq = i + 1;
      r.sentAtMs = System.currentTimeMillis();
      r.sketchCapacity = 256;
      r.sketchTotal = 2500;
      for (int k = 0; k < 100; k++) {
        r.items.add(new Report.Item(("key-" + k).getBytes(), 100 - k, 0));
      }
      bodies.add(Report.batchBinary(List.of(r.encodeBinary())));
    }
    Http http = new Http(Settings.parse(Map.of("hotkey.coordinator.url", url)));
    var threads = ManagementFactory.getThreadMXBean();
    var os = (com.sun.management.OperatingSystemMXBean)
        ManagementFactory.getOperatingSystemMXBean();
    long thread0 = threads.getCurrentThreadCpuTime();
    long process0 = os.getProcessCpuTime();
    int ok = 0;
    long threadHalf = thread0;
    long threadFirst = 0;
    for (byte[] body : bodies) {
      if (ok == n / 2) {
        threadHalf = threads.getCurrentThreadCpuTime();
      }
      if (http.request("POST", "/v1/reports/batch", body, Report.BATCH_CONTENT_TYPE, 5000)
          .status == 200) {
        ok++;
      }
      if (ok == 1 && threadFirst == 0) {
        threadFirst = threads.getCurrentThreadCpuTime();
      }
      if (gapMs > 0) {
        Thread.sleep(gapMs);
      }
    }
    long thread1 = threads.getCurrentThreadCpuTime();
    long process1 = os.getProcessCpuTime();
    System.out.printf("requests %d ok %d thread_us_per_request %.1f (first request %.1f,"
        + " second half %.1f) process_ms %.1f%n", n, ok, (thread1 - thread0) / 1e3 / n,
        (threadFirst - thread0) / 1e3, (thread1 - threadHalf) / 1e3 / (n - n / 2),
        (process1 - process0) / 1e6);
    if (ok != n) {
      System.exit(1);
    }
  }
}
