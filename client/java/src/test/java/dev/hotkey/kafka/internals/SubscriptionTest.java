package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyConfig;
import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.MergeContract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The list subscriber against a loopback coordinator peer: one POST /v1/hotkeys/subscribe for
 * all topics (renewed with a topic followed later), and the per-topic GET /v1/hotkeys
 * long-polls when the coordinator answers the subscription 404 (an older coordinator).
 */
class SubscriptionTest {
  private HttpServer server;
  private HotkeyClient client;
  private final List<String> subscriptions = new CopyOnWriteArrayList<>();
  private final AtomicInteger gets = new AtomicInteger();

  @AfterEach
  void stop() {
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.stop(0);
    }
  }

  private static void answer(HttpExchange ex, int status, String body) throws IOException {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    ex.sendResponseHeaders(status, b.length == 0 ? -1 : b.length);
    if (b.length > 0) {
      ex.getResponseBody().write(b);
    }
    ex.close();
  }

  private void start(boolean subscribeSupported) throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
    server.createContext("/v1/hotkeys/subscribe", ex -> {
      String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      if (!subscribeSupported) {
        answer(ex, 404, "{\"error\":\"not found\"}");
        return;
      }
      subscriptions.add(body);
      StringBuilder lists = new StringBuilder();
      for (String topic : List.of("alpha", "beta")) {
        if (body.contains("{\"topic\":\"" + topic + "\",\"since\":0}")) {
          lists.append(lists.length() > 0 ? "," : "")
              .append(Lists.listJson(topic, 3, 12, "hot", 1, 1));
        }
      }
      if (lists.length() == 0) {
        try {
          Thread.sleep(200); // parked: nothing newer
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      answer(ex, 200, "{\"lists\":[" + lists + "]}");
    });
    server.createContext("/v1/hotkeys", ex -> {
      gets.incrementAndGet();
      String q = ex.getRequestURI().getQuery();
      String topic = q.replaceAll(".*topic=([^&]*).*", "$1");
      if (q.contains("since=0")) {
        answer(ex, 200, Lists.listJson(topic, 4, 12, "hot", 1, 1));
      } else {
        try {
          Thread.sleep(200);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        answer(ex, 304, "");
      }
    });
    server.start();
    client = new HotkeyClient(Settings.parse(Map.of("hotkey.coordinator.url",
        "http://127.0.0.1:" + server.getAddress().getPort(), "hotkey.poll.wait.ms", "200",
        "hotkey.report.interval.ms", "3600000")), "subscription-test");
  }

  private static boolean eventually(BooleanSupplier f) throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (System.nanoTime() < deadline) {
      if (f.getAsBoolean()) {
        return true;
      }
      Thread.sleep(10);
    }
    return false;
  }

  @Test
  void oneSubscriptionCarriesEveryTopicAndIsRenewedForANewOne() throws Exception {
    start(true);
    client.topic("alpha");
    assertTrue(eventually(() -> client.listVersion("alpha") == 3));
    client.topic("beta");
    assertTrue(eventually(() -> client.listVersion("beta") == 3));
    assertTrue(subscriptions.stream().anyMatch(b -> b.contains("\"topic\":\"alpha\",\"since\":3")
        && b.contains("\"topic\":\"beta\",\"since\":0")), subscriptions.toString());
    assertEquals(0, gets.get(), "no per-topic long-poll while the subscription works");
  }

  @Test
  void anOlderCoordinatorGetsALongPollPerTopic() throws Exception {
    start(false);
    client.topic("alpha");
    client.topic("beta");
    assertTrue(eventually(() -> client.listVersion("alpha") == 4
        && client.listVersion("beta") == 4));
    assertTrue(gets.get() >= 2);
  }
}
