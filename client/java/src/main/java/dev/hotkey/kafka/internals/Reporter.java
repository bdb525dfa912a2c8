package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.MergeContract;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The reporter thread (client/src/reporter.cc): every hotkey.report.interval.ms it drains each
 * topic's sampler into one report and sends the round in one POST /v1/reports/batch (single
 * POST /v1/reports to a coordinator without the batch form, asked again every 5 minutes); a
 * surge sends the topic's window at once, and its follow-up one surge interval later. Failed
 * sends keep the reports queued (at most hotkey.report.queue.max per topic) and back off.
 * With hotkey.transport=kafka the reports go to the reports topic instead.
 */
final class Reporter {
  private static final long BATCH_PROBE_MS = 5 * 60 * 1000;
  private static final int BATCH_BYTES = 1 << 20;

  enum Outcome { ACCEPTED, REJECTED, RETRY }

  private static final class Pending {
    final TopicRouter topic;
    final long seq;
    final byte[] body;

    Pending(TopicRouter topic, long seq, byte[] body) {
      this.topic = topic;
      this.seq = seq;
      this.body = body;
    }
  }

  private static final class SurgeState {
    long last = Long.MIN_VALUE / 2;
    long followUp; // 0: none due
    final long[] mutedUntil = new long[Sampler.MUTE_SLOTS];
    int nextSlot;
  }

  private final Settings config;
  private final HotkeyClient client;
  private final KafkaTransport kafka;
  private final Http http;
  final Thread thread;
  final AtomicLong sent = new AtomicLong();
  final AtomicLong failed = new AtomicLong();
  final AtomicLong rejected = new AtomicLong();
  final AtomicLong dropped = new AtomicLong();
  final AtomicLong surges = new AtomicLong();
  /** Refused reports by the coordinator's reason (hash_mismatch, http_400, ...). */
  final java.util.concurrent.ConcurrentHashMap<String, AtomicLong> refusedByReason =
      new java.util.concurrent.ConcurrentHashMap<>();
  private String lastFailure = "";
  private boolean stopping;
  private boolean requested;
  // Set by a sampler that flagged a surge (on the send path: no lock, no wait), then the
  // thread is unparked: surges are handled when they happen, not found by polling (a 10 ms
  // poll cost a producer about 8 ms of CPU a second).
  private volatile boolean surgeSignalled;
  private long rounds;
  private boolean batchSupported = true;
  private long batchProbeAt;
  private final Map<TopicRouter, ArrayDeque<Pending>> queues = new HashMap<>();
  private final Map<TopicRouter, Long> windowStart = new HashMap<>();
  private final Map<TopicRouter, SurgeState> surge = new HashMap<>();
  // Per topic: whether it had local tables when its window started; a report of a window routed
  // with them carries the local mark (2^63) in its list_version.
  private final Map<TopicRouter, Boolean> windowLocal = new HashMap<>();
  private long seq;

  Reporter(Settings config, HotkeyClient client, KafkaTransport kafka) {
    this.config = config;
    this.client = client;
    this.kafka = kafka;
    this.http = kafka == null ? new Http(config) : null;
    this.thread = new Thread(this::loop, "hotkey-reporter");
    this.thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  private boolean surgesOn() {
    return config.surgeIntervalMs > 0;
  }

  private static long nowMs() {
    return System.nanoTime() / 1_000_000;
  }

  /** Sends the current windows now and waits (bounded) for that round. */
  void reportNow() {
    synchronized (this) {
      if (!thread.isAlive()) {
        return;
      }
      long target = rounds + 1;
      requested = true;
      notifyAll();
      LockSupport.unpark(thread);
      long deadline = nowMs() + config.httpTimeoutMs * 2L + 1000;
      while (!stopping && (rounds < target || requested)) {
        long left = deadline - nowMs();
        if (left <= 0) {
          return;
        }
        try {
          wait(left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  /** Stops the thread; with {@code flush}, the current windows are sent first (bounded). */
  void stop(boolean flush) {
    if (flush && thread.isAlive()) {
      reportNow();
    }
    synchronized (this) {
      stopping = true;
      notifyAll();
    }
    LockSupport.unpark(thread);
    if (http != null) {
      http.close();
    }
    try {
      thread.join(config.httpTimeoutMs + 1000L);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (kafka != null) {
      kafka.closeProducer();
    }
  }

  private void loop() {
    long next = nowMs() + config.reportIntervalMs;
    long retryAt = nowMs();
    long lastRound = nowMs();
    Backoff backoff = new Backoff(config.backoffInitialMs, config.backoffMaxMs);
    for (;;) {
      boolean forced;
      long until = surgesOn() ? Math.min(next, surgeDeadline()) : next;
      for (;;) {
        synchronized (this) {
          if (stopping || requested) {
            break;
          }
        }
        if (surgeSignalled) {
          surgeSignalled = false;
          break;
        }
        long left = until - nowMs();
        if (left <= 0) {
          break;
        }
        // Woken early by reportNow, stop and surges (unpark); a permit given before this
        // park makes it return at once, so no wake-up is lost.
        LockSupport.parkNanos(this, left * 1_000_000L);
        if (Thread.currentThread().isInterrupted()) {
          return;
        }
      }
      synchronized (this) {
        if (stopping) {
          break;
        }
        forced = requested;
        requested = false;
      }
      long now = nowMs();
      List<TopicRouter> topics = client.topics();
      client.metrics.syncTopics(topics);
      for (TopicRouter t : topics) {
        windowStart.putIfAbsent(t, lastRound);
        if (client.stale(t)) {
          client.log.listStale(t.topic, t.version(), t.staleness.cause(), config.listStaleMs);
        }
      }
      if (!forced && now < next) {
        int built = 0;
        for (TopicRouter t : takeSurges(topics, now)) {
          built += buildReport(t, now);
        }
        if (built == 0) {
          continue;
        }
        surges.addAndGet(built);
        if (now >= retryAt) {
          if (flush()) {
            backoff.reset();
          } else {
            retryAt = nowMs() + backoff.nextMs();
          }
        }
        continue;
      }
      if (now >= next) {
        next = now + config.reportIntervalMs;
      }
      lastRound = now;
      for (TopicRouter t : topics) {
        buildReport(t, now);
      }
      if (forced || now >= retryAt) {
        if (flush()) {
          backoff.reset();
        } else {
          retryAt = nowMs() + backoff.nextMs();
        }
        if (forced && kafka != null) {
          kafka.flushReports(config.httpTimeoutMs);
        }
      }
      synchronized (this) {
        rounds++;
        notifyAll();
      }
    }
  }

  /** A sampler flagged a surge: handle it now (any thread; never blocks). */
  void wake() {
    surgeSignalled = true;
    LockSupport.unpark(thread);
  }

  /** The earliest surge follow-up or mute expiry due (Long.MAX_VALUE: none). */
  private long surgeDeadline() {
    long at = Long.MAX_VALUE;
    for (SurgeState st : surge.values()) {
      if (st.followUp != 0) {
        at = Math.min(at, st.followUp);
      }
      for (long m : st.mutedUntil) {
        if (m != 0) {
          at = Math.min(at, m);
        }
      }
    }
    return at;
  }

  private long surgeMuteMs() {
    return Math.max(5000, config.reportIntervalMs * 10L);
  }

  private List<TopicRouter> takeSurges(List<TopicRouter> topics, long now) {
    List<TopicRouter> due = new ArrayList<>();
    for (TopicRouter t : topics) {
      int partitions = partitionsOf(t);
      t.sampler.setPartitions(partitions);
      SurgeState st = surge.computeIfAbsent(t, k -> new SurgeState());
      for (int slot = 0; slot < Sampler.MUTE_SLOTS; slot++) {
        if (st.mutedUntil[slot] != 0 && now >= st.mutedUntil[slot]) {
          t.sampler.setMuted(slot, 0);
          st.mutedUntil[slot] = 0;
        }
      }
      if (st.followUp != 0 && now >= st.followUp) {
        st.followUp = 0;
        st.last = now;
        due.add(t);
        continue;
      }
      long fp = t.sampler.takeSurge();
      if (fp == 0 || now - st.last < config.surgeIntervalMs) {
        continue;
      }
      st.last = now;
      st.followUp = now + config.surgeIntervalMs;
      t.sampler.setMuted(st.nextSlot, fp);
      st.mutedUntil[st.nextSlot] = now + surgeMuteMs();
      st.nextSlot = (st.nextSlot + 1) % Sampler.MUTE_SLOTS;
      due.add(t);
    }
    return due;
  }

  private static int partitionsOf(TopicRouter t) {
    int partitions = t.livePartitions();
    HotKeyList list = t.list();
    if (partitions < 1 && list != null) {
      partitions = list.partitions;
    }
    return partitions;
  }

  /** Queues the report of t's window since its start (which becomes now); 1 if one was queued. */
  private int buildReport(TopicRouter t, long now) {
    long start = windowStart.getOrDefault(t, now);
    long windowMs = now - start;
    windowStart.put(t, now);
    int partitions = partitionsOf(t);
    if (partitions < 1) {
      return 0;
    }
    if (surgesOn()) {
      t.sampler.setPartitions(partitions);
    }
    Sampler.Window w = t.sampler.drain(partitions, Math.max(0, windowMs), config.reportIntervalMs);
    if (w.total == 0) {
      return 0;
    }
    HotKeyList list = t.list();
    Report r = new Report();
    r.producer = config.producerId;
    r.topic = t.topic;
    r.partitions = partitions;
    r.hash = HashFamily.MURMUR2;
    if (list != null) {
      r.separator = list.separator;
    }
    r.windowMs = Math.min(0xffffffffL, Math.max(1, windowMs));
    r.sampleRate = w.sampleRate;
    r.total = w.total;
    r.partitionCounts = w.partitionCounts;
    r.seq = ++seq;
    r.sentAtMs = System.currentTimeMillis();
    r.listVersion = t.version();
    r.sketchCapacity = w.sketch.capacity();
    r.sketchMin = w.sketch.minCount();
    r.sketchTotal = w.sketchTotal;
    for (SpaceSaving.Item it : w.sketch.items()) {
      r.items.add(new Report.Item(it.key, it.count, it.error));
    }
    // A window routed with local tables at any point: the coordinator cannot account its load
    // against a list of its own (it knows no such version and keeps only the sketch), nor adopt
    // it as a floor (docs/CLIENT.md, "Local tables").
    if (windowLocal.getOrDefault(t, false) || t.localTables() != null) {
      r.listVersion |= MergeContract.LOCAL_TABLE_VERSION_BIT;
    }
    if (config.listStaleMs > 0) {
      localTables(t, partitions, w, r.items);
    }
    windowLocal.put(t, t.localTables() != null);
    byte[] body = config.reportJson ? r.toJson().getBytes(StandardCharsets.UTF_8)
        : r.encodeBinary();
    ArrayDeque<Pending> q = queues.computeIfAbsent(t, k -> new ArrayDeque<>());
    q.addLast(new Pending(t, r.seq, body));
    while (q.size() > config.reportQueueMax) {
      q.removeFirst();
      dropped.incrementAndGet();
      t.reportsDropped.incrementAndGet();
    }
    return 1;
  }

  /**
   * Plans and sets (or drops) t's local tables from the window just drained, while its list is
   * stale and its list state known (docs/CLIENT.md, "Local tables"; LocalPlan).
   */
  private void localTables(TopicRouter t, int partitions, Sampler.Window w,
      List<Report.Item> items) {
    // The generation first: a list or a contact that ends the staleness after this read bumps
    // it, and setLocalTables then refuses tables planned from the stale view.
    long generation = t.localGeneration();
    TopicRouter.LocalTables current = t.localTables();
    if (!client.stale(t) || !(t.staleness.known() || t.version() != 0)) {
      if (current != null) {
        t.dropLocalTables();
      }
      return;
    }
    HotKeyList list = t.list();
    LocalPlan.Input in = new LocalPlan.Input();
    in.partitions = partitions;
    if (list != null && Salts.validSeparator(list.separator)) {
      in.separator = list.separator;
    }
    in.partitionCounts = w.partitionCounts;
    in.total = w.total;
    in.sketchTotal = w.sketchTotal;
    in.items = items;
    in.surgeFactor = config.surgeFactor;
    if (list != null) {
      for (HotKeyList.HotKey k : list.keys) {
        in.listed.add(k.key);
      }
      in.denied = list.denied;
      in.neverSalt = list.neverSalt;
    }
    boolean fits = current != null && current.partitions == partitions;
    if (fits) {
      in.current = current.keys;
    }
    LocalPlan plan;
    try {
      plan = LocalPlan.plan(in);
    } catch (RuntimeException e) {
      return; // cannot plan this window: the tables stay as they are
    }
    if (fits && !plan.changed()) {
      return;
    }
    if (plan.keys.isEmpty()) {
      if (current != null) {
        t.dropLocalTables();
      }
      return;
    }
    TopicRouter.LocalTables tables =
        new TopicRouter.LocalTables(list != null ? list.version : 0, partitions, plan.keys);
    if (t.setLocalTables(tables, generation)) {
      client.log.localTable(t.topic, tables);
    }
  }

  /** Sends everything queued; false when something is still waiting. */
  private boolean flush() {
    List<Pending> batch = new ArrayList<>();
    for (ArrayDeque<Pending> q : queues.values()) {
      batch.addAll(q);
    }
    if (batch.isEmpty()) {
      return true;
    }
    Result[] out = send(batch);
    boolean all = true;
    boolean anyAccepted = false;
    for (int i = 0; i < batch.size(); i++) {
      Pending p = batch.get(i);
      switch (out[i].outcome) {
        case ACCEPTED:
          if (kafka == null) {
            sent.incrementAndGet();
          }
          anyAccepted = true;
          queues.get(p.topic).remove(p);
          break;
        case REJECTED:
          anyAccepted = true; // the coordinator answered: it is reachable
          queues.get(p.topic).remove(p);
          refused(p.topic.topic, out[i]);
          break;
        default:
          all = false;
      }
    }
    if (!all) {
      failed.incrementAndGet();
      if (!anyAccepted) {
        client.log.failed("reports", target(), lastFailure);
      }
    }
    if (anyAccepted || all) {
      client.log.succeeded("reports", target());
    }
    return all;
  }

  private String target() {
    return kafka != null ? "reports topic " + config.reportsTopic : config.coordinatorUrl;
  }

  /** A refused report: counted by reason, logged (rate-limited), a family mismatch explained. */
  private void refused(String topic, Result r) {
    rejected.incrementAndGet();
    AtomicLong count = refusedByReason.computeIfAbsent(r.reason, k -> new AtomicLong());
    long n = count.incrementAndGet();
    client.metrics.syncReason(r.reason, count);
    client.log.refused(topic, r.status, r.reason, r.error, n);
    if (r.reason.equals("hash_mismatch")) {
      String family = familyIn(r.error);
      client.log.familyMismatch(topic, family != null ? family : "another family",
          "the coordinator refused this producer's report: " + r.error);
    }
  }

  /** The family the coordinator's hash_mismatch message names for the topic, or null. */
  static String familyIn(String error) {
    for (String marker : new String[] {"partitioned with ", "configured with hash "}) {
      int at = error.indexOf(marker);
      if (at >= 0) {
        int from = at + marker.length();
        int to = from;
        while (to < error.length() && Character.isLetterOrDigit(error.charAt(to))) {
          to++;
        }
        return to > from ? error.substring(from, to) : null;
      }
    }
    return null;
  }

  /** One report's answer: what to do with it, and what the coordinator said. */
  static final class Result {
    final Outcome outcome;
    final int status;
    final String reason;
    final String error;

    Result(Outcome outcome, int status, String reason, String error) {
      this.outcome = outcome;
      this.status = status;
      this.reason = reason;
      this.error = error;
    }

    static final Result RETRY = new Result(Outcome.RETRY, 0, "", "");
    static final Result SENT = new Result(Outcome.ACCEPTED, 200, "", "");

    /** From an answer's status and JSON body (an error's "reason" and "error" members). */
    static Result of(int status, Object body) {
      Outcome o = outcomeOf(status);
      String reason = "";
      String error = "";
      if (body instanceof Map) {
        Object re = ((Map<?, ?>) body).get("reason");
        Object er = ((Map<?, ?>) body).get("error");
        reason = re instanceof String ? (String) re : "";
        error = er instanceof String ? (String) er : "";
      }
      if (reason.isEmpty() && o == Outcome.REJECTED) {
        reason = "http_" + status;
      }
      return new Result(o, status, reason, error);
    }
  }

  /**
   * 2xx: accepted. 400, 409, 413, 422: refused (the same report would be refused again:
   * invalid, or its family is not the topic's), dropped and counted by reason. Anything else
   * (no answer, 5xx, 401/403, 429) is retried.
   */
  static Outcome outcomeOf(int status) {
    if (status >= 200 && status < 300) {
      return Outcome.ACCEPTED;
    }
    if (status == 400 || status == 409 || status == 413 || status == 422) {
      return Outcome.REJECTED;
    }
    return Outcome.RETRY;
  }

  private static Object jsonOf(byte[] body) {
    try {
      return Json.parse(new String(body, StandardCharsets.UTF_8));
    } catch (Json.SyntaxError e) {
      return null;
    }
  }

  private static String describe(Http.Answer a) {
    Object doc = jsonOf(a.body);
    Object er = doc instanceof Map ? ((Map<?, ?>) doc).get("error") : null;
    return "HTTP " + a.status + (er instanceof String ? ": " + er : "");
  }

  private Result[] send(List<Pending> batch) {
    Result[] out = new Result[batch.size()];
    java.util.Arrays.fill(out, Result.RETRY);
    if (kafka != null) {
      for (int i = 0; i < batch.size(); i++) {
        if (!kafka.sendReport(batch.get(i).topic.topic, batch.get(i).body)) {
          lastFailure = "the transport's producer did not take the report";
          break;
        }
        out[i] = Result.SENT;
      }
      return out;
    }
    if (batchSupported || nowMs() >= batchProbeAt) {
      int i = 0;
      boolean unsupported = false;
      while (i < batch.size()) {
        int end = i;
        long bytes = 0;
        while (end < batch.size() && end - i < Report.MAX_REPORTS_PER_BATCH
            && (end == i || bytes + batch.get(end).body.length <= BATCH_BYTES)) {
          bytes += batch.get(end).body.length;
          end++;
        }
        int answer = postBatch(batch, i, end, out);
        if (answer == 2) {
          batchSupported = false;
          batchProbeAt = nowMs() + BATCH_PROBE_MS;
          unsupported = true;
          break;
        }
        batchSupported = true;
        if (answer == 1) {
          return out;
        }
        i = end;
      }
      if (!unsupported) {
        return out;
      }
    }
    String type = config.reportJson ? Report.JSON_CONTENT_TYPE : Report.BINARY_CONTENT_TYPE;
    for (int i = 0; i < batch.size(); i++) {
      if (out[i].outcome != Outcome.RETRY) {
        continue;
      }
      try {
        Http.Answer a = http.request("POST", "/v1/reports", batch.get(i).body, type,
            config.httpTimeoutMs);
        out[i] = Result.of(a.status, jsonOf(a.body));
        if (out[i].outcome == Outcome.RETRY) {
          lastFailure = describe(a);
        }
      } catch (IOException e) {
        lastFailure = String.valueOf(e.getMessage());
      }
      if (out[i].outcome == Outcome.RETRY) {
        break;
      }
    }
    return out;
  }

  /** POST /v1/reports/batch for batch[begin, end): 0 done, 1 failed, 2 unsupported. */
  private int postBatch(List<Pending> batch, int begin, int end, Result[] out) {
    List<byte[]> bodies = new ArrayList<>();
    for (int i = begin; i < end; i++) {
      bodies.add(batch.get(i).body);
    }
    byte[] body = config.reportJson ? Report.batchJson(bodies) : Report.batchBinary(bodies);
    Http.Answer a;
    try {
      a = http.request("POST", "/v1/reports/batch", body,
          config.reportJson ? Report.JSON_CONTENT_TYPE : Report.BATCH_CONTENT_TYPE,
          config.httpTimeoutMs);
    } catch (IOException e) {
      lastFailure = String.valueOf(e.getMessage());
      return 1;
    }
    if (a.status == 404 || a.status == 405 || a.status == 415) {
      return 2;
    }
    if (a.status == 413 && end - begin > 1) {
      return 2;
    }
    if (a.status != 200) {
      Result r = Result.of(a.status, jsonOf(a.body));
      for (int i = begin; i < end; i++) {
        out[i] = r;
      }
      if (r.outcome == Outcome.RETRY) {
        lastFailure = describe(a);
        return 1;
      }
      return 0;
    }
    List<Result> results = batchResults(a.body);
    if (results == null || results.size() != end - begin) {
      lastFailure = "the batch answer was not one result per report";
      return 1;
    }
    boolean anyFailed = false;
    for (int i = begin; i < end; i++) {
      out[i] = results.get(i - begin);
      if (out[i].outcome == Outcome.RETRY) {
        anyFailed = true;
        lastFailure = "HTTP " + out[i].status + (out[i].error.isEmpty() ? "" : ": "
            + out[i].error);
      }
    }
    return anyFailed ? 1 : 0;
  }

  /** The per-report results of a batch answer, or null for anything else. */
  static List<Result> batchResults(byte[] answer) {
    Object doc = jsonOf(answer);
    if (!(doc instanceof Map) || !(((Map<?, ?>) doc).get("results") instanceof List)) {
      return null;
    }
    List<Result> out = new ArrayList<>();
    for (Object r : (List<?>) ((Map<?, ?>) doc).get("results")) {
      if (!(r instanceof Map) || !(((Map<?, ?>) r).get("status") instanceof Json.Num)) {
        return null;
      }
      Json.Num n = (Json.Num) ((Map<?, ?>) r).get("status");
      if (n.integer == null || n.integer.bitLength() > 31) {
        return null;
      }
      out.add(Result.of(n.integer.intValue(), r));
    }
    return out;
  }
}
