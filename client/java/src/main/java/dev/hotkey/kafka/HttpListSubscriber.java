package dev.hotkey.kafka;

import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Lists over HTTP (client/src/list_subscriber.cc): a daemon thread per topic long-polls
 * GET /v1/hotkeys?topic=T&since=V&wait_ms=W. A 200 is decoded and fully validated (every salt
 * recomputed) and published only when it is for this topic and newer; garbage, foreign topics,
 * older versions, timeouts and errors keep the last good list and back off. The expired policy
 * applies after hotkey.list.ttl.ms without an answer.
 */
final class HttpListSubscriber implements HotkeyClient.ListSource {
  private final HotkeyConfig config;
  private final HotkeyClient client;
  private final List<Poller> pollers = new ArrayList<>();
  private volatile boolean stopping;

  HttpListSubscriber(HotkeyConfig config, HotkeyClient client) {
    this.config = config;
    this.client = client;
  }

  private final class Poller implements Runnable {
    final TopicRouter topic;
    final Http http = new Http(config);
    final Thread thread;

    Poller(TopicRouter topic) {
      this.topic = topic;
      this.thread = new Thread(this, "hotkey-lists-" + topic.topic);
      this.thread.setDaemon(true);
    }

    @Override
    public void run() {
      boolean expireToPlain =
          config.listTtlMs > 0 && config.expiredPolicy == HotkeyConfig.ExpiredPolicy.PLAIN;
      Backoff backoff = new Backoff(config.backoffInitialMs, config.backoffMaxMs);
      long lastContact = System.nanoTime();
      String query = "/v1/hotkeys?topic=" + URLEncoder.encode(topic.topic, StandardCharsets.UTF_8)
          + "&wait_ms=" + config.pollWaitMs + "&since=";
      while (!stopping) {
        long since = topic.version();
        boolean ok = false;
        try {
          Http.Answer a = http.request("GET", query + Long.toUnsignedString(since), null, null,
              config.httpTimeoutMs + config.pollWaitMs);
          if (a.status == 304) {
            ok = true;
            lastContact = System.nanoTime();
          } else if (a.status == 200) {
            lastContact = System.nanoTime();
            ok = accept(topic, a.body, since);
          }
        } catch (IOException e) {
          ok = false;
        }
        if (stopping) {
          break;
        }
        if (ok) {
          backoff.reset();
          if (topic.plain()) {
            topic.setPlain(false);
          }
          continue;
        }
        client.listErrors.incrementAndGet();
        if (expireToPlain && (System.nanoTime() - lastContact) / 1_000_000 > config.listTtlMs
            && !topic.plain()) {
          topic.setPlain(true);
        }
        long wait = backoff.nextMs();
        if (expireToPlain) {
          wait = Math.min(wait, Math.max(config.listTtlMs / 2, 1));
        }
        sleep(wait);
      }
    }

    private void sleep(long ms) {
      synchronized (HttpListSubscriber.this) {
        if (stopping) {
          return;
        }
        try {
          HttpListSubscriber.this.wait(ms);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  /** Validates a list body and publishes it when newer; false for anything refused. */
  boolean accept(TopicRouter topic, byte[] body, long since) {
    try {
      HotKeyList list = HotKeyList.parse(body);
      if (!list.topic.equals(topic.topic)) {
        return false;
      }
      if (Long.compareUnsigned(list.version, since) <= 0) {
        return false;
      }
      if (topic.publish(list)) {
        client.listUpdates.incrementAndGet();
      }
      return true;
    } catch (DecodeException e) {
      return false;
    }
  }

  @Override
  public synchronized void follow(TopicRouter topic) {
    if (stopping) {
      return;
    }
    for (Poller p : pollers) {
      if (p.topic == topic) {
        return;
      }
    }
    Poller p = new Poller(topic);
    pollers.add(p);
    p.thread.start();
  }

  @Override
  public void close() {
    List<Poller> all;
    synchronized (this) {
      stopping = true;
      notifyAll();
      all = new ArrayList<>(pollers);
    }
    for (Poller p : all) {
      p.http.close();
    }
    for (Poller p : all) {
      try {
        p.thread.join(2000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}
