package dev.hotkey.kafka.internals;

import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Lists over HTTP (client/src/list_subscriber.cc). One daemon thread keeps one
 * POST /v1/hotkeys/subscribe in flight for all the client's topics (docs/API.md, issue 27); a
 * coordinator without it (404/405) gets a long-poll per topic, GET /v1/hotkeys?topic=T&since=V,
 * and is asked again every 5 minutes. Every list is decoded and fully validated (every salt
 * recomputed) and published only when it is for a requested topic and newer; garbage, foreign
 * topics, older versions, timeouts and errors keep the last good list and back off. The expired
 * policy applies after hotkey.list.ttl.ms without an answer.
 */
final class HttpListSubscriber implements HotkeyClient.ListSource {
  static final long SUBSCRIBE_PROBE_MS = 5 * 60 * 1000;
  static final int MAX_SUBSCRIBED_TOPICS = 1024;

  private final Settings config;
  private final HotkeyClient client;
  private final List<TopicRouter> topics = new ArrayList<>(); // guarded by this
  private final List<Poller> pollers = new ArrayList<>(); // guarded by this
  private final Http subscribeHttp;
  private Thread subscriber; // guarded by this
  private boolean topicsChanged; // guarded by this
  private volatile boolean stopping;
  private volatile boolean perTopic; // the coordinator has no subscription endpoint
  // The subscription thread only: topics the last answer named stale.
  private int lastStaleTopics;
  // While answers name stale topics without lists, requests go at most this often.
  static final long STALE_REQUEST_GAP_MS = 100;

  HttpListSubscriber(Settings config, HotkeyClient client) {
    this.config = config;
    this.client = client;
    this.subscribeHttp = new Http(config);
  }

  private final class Poller implements Runnable {
    final TopicRouter topic;
    final Http http = new Http(config);
    final Thread thread;
    volatile boolean stop;

    Poller(TopicRouter topic) {
      this.topic = topic;
      this.thread = new Thread(this, "hotkey-lists-" + topic.topic);
      this.thread.setDaemon(true);
    }

    @Override
    public void run() {
      Backoff backoff = new Backoff(config.backoffInitialMs, config.backoffMaxMs);
      long lastContact = System.nanoTime();
      String query = "/v1/hotkeys?topic=" + URLEncoder.encode(topic.topic, StandardCharsets.UTF_8)
          + "&since=";
      while (!stopping && !stop) {
        long since = topic.version();
        boolean ok = false;
        String unreachable = null;
        int waitMs = nextWaitMs(List.of(topic), 0);
        try {
          Http.Answer a = http.request("GET", query + Long.toUnsignedString(since) + "&wait_ms="
              + waitMs, null, null, config.httpTimeoutMs + waitMs);
          if (a.status == 304) {
            ok = true;
            lastContact = System.nanoTime();
            answered(topic, false);
          } else if (a.status == 200) {
            lastContact = System.nanoTime();
            answered(topic, false);
            ok = accept(topic, a.body, since);
          } else {
            unreachable = "HTTP " + a.status;
          }
        } catch (IOException e) {
          unreachable = String.valueOf(e.getMessage());
        }
        if (unreachable != null && !stopping && !stop) {
          client.log.failed("lists", config.coordinatorUrl, unreachable);
        } else if (unreachable == null) {
          client.log.succeeded("lists", config.coordinatorUrl);
        }
        if (stopping || stop) {
          break;
        }
        if (ok) {
          backoff.reset();
          contact(List.of(topic));
          continue;
        }
        client.listErrors.incrementAndGet();
        if (unreachable != null) {
          lost(List.of(topic));
        }
        sleep(failed(List.of(topic), lastContact, backoff));
      }
    }
  }

  /** A good answer: topics that had expired to plain route with their list again. */
  private static void contact(List<TopicRouter> ts) {
    long now = System.nanoTime();
    for (TopicRouter t : ts) {
      t.contact(now);
      if (t.plain()) {
        t.setPlain(false);
      }
    }
  }

  /** After a failure: the expired policy, and how long to wait before trying again. */
  private long failed(List<TopicRouter> ts, long lastContact, Backoff backoff) {
    boolean expireToPlain =
        config.listTtlMs > 0 && config.expiredPolicy == Settings.ExpiredPolicy.PLAIN;
    if (expireToPlain && (System.nanoTime() - lastContact) / 1_000_000 > config.listTtlMs) {
      for (TopicRouter t : ts) {
        if (!t.plain()) {
          t.setPlain(true);
        }
      }
    }
    long wait = backoff.nextMs();
    if (expireToPlain) {
      wait = Math.min(wait, Math.max(config.listTtlMs / 2, 1));
    }
    // Stale topics route with local tables until contact is back: ask at least once a bound.
    return config.listStaleMs > 0 ? Math.min(wait, config.listStaleMs) : wait;
  }

  /**
   * The wait_ms of the next request: hotkey.poll.wait.ms, or 0 to learn at once what the
   * coordinator holds (a topic whose list state is unknown, contact lost: a parked request
   * would say nothing until its wait ends), or at most the stale bound while the last answer
   * named stale topics (so that the set is asked again).
   */
  private int nextWaitMs(List<TopicRouter> ts, int staleTopics) {
    if (config.listStaleMs == 0) {
      return config.pollWaitMs;
    }
    for (TopicRouter t : ts) {
      if (!(t.staleness.known() || t.version() != 0) || t.staleness.outOfContact()) {
        return 0;
      }
    }
    return staleTopics > 0 ? Math.min(config.pollWaitMs, config.listStaleMs) : config.pollWaitMs;
  }

  /**
   * The coordinator answered for t (contact, list state known, its owner gone or not); a topic
   * that is not stale any more has its local tables dropped at once.
   */
  private void answered(TopicRouter t, boolean ownerGone) {
    t.staleness.contact();
    t.staleness.setKnown();
    t.staleness.setOwnerGone(ownerGone, "the coordinator says the topic's owner is gone");
    if (!ownerGone && !client.stale(t)) {
      t.dropLocalTables();
    }
  }

  /** A request carrying these topics failed now. */
  private void lost(List<TopicRouter> ts) {
    long now = Staleness.nowMs();
    for (TopicRouter t : ts) {
      t.staleness.lost(now, "no answer from the coordinator");
    }
  }

  private void sleep(long ms) {
    synchronized (this) {
      if (stopping) {
        return;
      }
      try {
        wait(ms);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Validates a list body and publishes it when newer; false for anything refused. */
  boolean accept(TopicRouter topic, byte[] body, long since) {
    try {
      return publish(topic, HotKeyList.parse(body), since);
    } catch (DecodeException e) {
      client.log.listRefused(topic.topic, e.getMessage());
      return false;
    }
  }

  private boolean publish(TopicRouter topic, HotKeyList list, long since) {
    if (!list.topic.equals(topic.topic) || Long.compareUnsigned(list.version, since) <= 0) {
      client.log.listRefused(topic.topic, !list.topic.equals(topic.topic)
          ? "the answer is the list of topic " + list.topic
          : "version " + Long.toUnsignedString(list.version) + " is not above "
              + Long.toUnsignedString(since));
      return false;
    }
    if (!client.published(topic, list)) {
      client.log.listRefused(topic.topic, HotkeyClient.refusal(topic, list));
      return false;
    }
    return true;
  }

  /** The subscription thread: one request for every topic, per-topic polls as the fallback. */
  private void subscribeLoop() {
    Backoff backoff = new Backoff(config.backoffInitialMs, config.backoffMaxMs);
    long lastContact = System.nanoTime();
    long probeAt = 0;
    while (!stopping) {
      List<TopicRouter> ts;
      synchronized (this) {
        topicsChanged = false;
        ts = new ArrayList<>(topics);
      }
      if (perTopic && System.currentTimeMillis() < probeAt) {
        sleep(Math.min(1000, probeAt - System.currentTimeMillis()));
        continue;
      }
      StringBuilder body = new StringBuilder("{\"topics\":[");
      Map<String, Long> since = new HashMap<>();
      for (int i = 0; i < ts.size(); i++) {
        TopicRouter t = ts.get(i);
        since.put(t.topic, t.version());
        body.append(i > 0 ? "," : "").append("{\"topic\":");
        Json.writeString(body, t.topic);
        body.append(",\"since\":").append(Long.toUnsignedString(since.get(t.topic))).append('}');
      }
      // A probe while per-topic polls run answers at once; a subscription parks.
      int waitMs = perTopic ? 0 : nextWaitMs(ts, lastStaleTopics);
      body.append("],\"wait_ms\":").append(waitMs).append('}');
      long asked = System.nanoTime();
      int status;
      byte[] answer;
      String failure = null;
      try {
        Http.Answer a = subscribeHttp.request("POST", "/v1/hotkeys/subscribe",
            body.toString().getBytes(StandardCharsets.UTF_8), "application/json",
            config.httpTimeoutMs + waitMs);
        status = a.status;
        answer = a.body;
      } catch (IOException e) {
        status = 0;
        answer = null;
        failure = String.valueOf(e.getMessage());
      }
      if (stopping) {
        break;
      }
      synchronized (this) {
        if (topicsChanged) {
          continue; // aborted for a new topic: subscribe again with it
        }
      }
      if (status == 0 || (status >= 300 && status != 404 && status != 405)) {
        client.log.failed("lists", config.coordinatorUrl,
            failure != null ? failure : "HTTP " + status);
      } else {
        client.log.succeeded("lists", config.coordinatorUrl);
      }
      if (status == 404 || status == 405) {
        // An older coordinator: a long-poll per topic, and the subscription asked again later.
        setPerTopic(true);
        probeAt = System.currentTimeMillis() + SUBSCRIBE_PROBE_MS;
        continue;
      }
      Answer got = status == 200 ? read(ts, since, answer) : null;
      if (got != null) {
        // Read: the coordinator is in contact for every topic asked about, whatever it said.
        int staleTopics = 0;
        for (TopicRouter t : ts) {
          boolean gone = got.stale.contains(t.topic);
          staleTopics += gone ? 1 : 0;
          answered(t, gone);
        }
        lastStaleTopics = staleTopics;
        long since0 = (System.nanoTime() - asked) / 1_000_000;
        if (got.lists == 0 && staleTopics > 0 && since0 < STALE_REQUEST_GAP_MS) {
          // Answered because the stale set changed (or its wait passed): a coordinator that
          // kept answering at once would otherwise be asked in a tight loop.
          sleep(STALE_REQUEST_GAP_MS - since0);
        }
      } else if (status != 404 && status != 405) {
        lost(ts);
      }
      if (got != null && got.allAccepted) {
        lastContact = System.nanoTime();
        backoff.reset();
        if (perTopic) {
          setPerTopic(false);
        }
        contact(ts);
        continue;
      }
      client.listErrors.incrementAndGet();
      if (!perTopic) {
        sleep(failed(ts, lastContact, backoff));
      } else {
        probeAt = System.currentTimeMillis() + SUBSCRIBE_PROBE_MS;
      }
    }
  }

  /** What a subscription's answer said. */
  private static final class Answer {
    int lists; // lists it carried
    boolean allAccepted = true; // every one validated and published
    final Set<String> stale = new HashSet<>(); // the topics its `stale` member names
  }

  /**
   * A subscription's answer: every list validated and published when newer; null when the body
   * is not an answer (then nothing of it is used).
   */
  private Answer read(List<TopicRouter> ts, Map<String, Long> since, byte[] answer) {
    Map<String, TopicRouter> byName = new HashMap<>();
    for (TopicRouter t : ts) {
      byName.put(t.topic, t);
    }
    Object doc;
    try {
      doc = Json.parse(new String(answer, StandardCharsets.UTF_8));
    } catch (Json.SyntaxError e) {
      return null;
    }
    if (!(doc instanceof Map) || !(((Map<?, ?>) doc).get("lists") instanceof List)) {
      return null;
    }
    Answer out = new Answer();
    // The topics whose owner the coordinator sees as gone (cluster mode); absent: none.
    Object stale = ((Map<?, ?>) doc).get("stale");
    if (stale != null && stale != Json.NULL) {
      if (!(stale instanceof List)) {
        return null;
      }
      for (Object name : (List<?>) stale) {
        if (!(name instanceof String)) {
          return null;
        }
        out.stale.add((String) name);
      }
    }
    for (Object l : (List<?>) ((Map<?, ?>) doc).get("lists")) {
      out.lists++;
      try {
        HotKeyList list = HotKeyList.fromJson(l);
        TopicRouter t = byName.get(list.topic);
        if (t == null || !publish(t, list, since.get(list.topic))) {
          out.allAccepted = false;
        }
      } catch (DecodeException e) {
        client.log.listRefused("(subscription)", e.getMessage());
        out.allAccepted = false;
      }
    }
    return out;
  }

  private synchronized void setPerTopic(boolean on) {
    perTopic = on;
    if (on) {
      for (TopicRouter t : topics) {
        startPoller(t);
      }
    } else {
      for (Poller p : pollers) {
        p.stop = true;
        p.http.close();
      }
      pollers.clear();
    }
  }

  private void startPoller(TopicRouter t) {
    for (Poller p : pollers) {
      if (p.topic == t) {
        return;
      }
    }
    Poller p = new Poller(t);
    pollers.add(p);
    p.thread.start();
  }

  @Override
  public synchronized void follow(TopicRouter topic) {
    if (stopping || topics.contains(topic)) {
      return;
    }
    topics.add(topic);
    if (topics.size() > MAX_SUBSCRIBED_TOPICS && !perTopic) {
      // More topics than one subscription takes: a long-poll each.
      perTopic = true;
    }
    if (perTopic) {
      startPoller(topic);
    }
    topicsChanged = true;
    if (subscriber == null) {
      subscriber = new Thread(this::subscribeLoop, "hotkey-lists");
      subscriber.setDaemon(true);
      subscriber.start();
    } else {
      // The parked subscription lacks this topic: end it, the loop subscribes again.
      subscribeHttp.abortCurrent();
      notifyAll();
    }
  }

  @Override
  public void close() {
    List<Poller> all;
    Thread sub;
    synchronized (this) {
      stopping = true;
      notifyAll();
      all = new ArrayList<>(pollers);
      sub = subscriber;
    }
    subscribeHttp.close();
    for (Poller p : all) {
      p.http.close();
    }
    try {
      if (sub != null) {
        sub.join(2000);
      }
      for (Poller p : all) {
        p.thread.join(2000);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
