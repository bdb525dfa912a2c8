package dev.hotkey.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * Requests aborted from another thread (the list subscriber aborts its parked subscription when
 * a topic is added, and close() aborts whatever is in flight) fail with an IOException, whatever
 * moment the abort hits: HttpURLConnection throws a RuntimeException (a NullPointerException
 * inside) when disconnect() races with getResponseCode(), which once ended the subscriber thread
 * (no list for the producer's remaining life).
 */
class HttpTest {
  @Test
  void anAbortAtAnyMomentIsAnIoException() throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
    server.createContext("/v1/hotkeys/subscribe", ex -> {
      ex.getRequestBody().readAllBytes();
      LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(2_000_000));
      byte[] b = "{\"lists\":[]}".getBytes(StandardCharsets.UTF_8);
      try {
        ex.sendResponseHeaders(200, b.length);
        ex.getResponseBody().write(b);
      } catch (IOException e) {
        // the client went away: what this test does on purpose
      }
      ex.close();
    });
    server.start();
    try {
      HotkeyConfig config = HotkeyConfig.parse(Map.of("hotkey.coordinator.url",
          "http://127.0.0.1:" + server.getAddress().getPort()));
      Http http = new Http(config);
      AtomicInteger done = new AtomicInteger();
      Thread aborter = new Thread(() -> {
        while (done.get() == 0) {
          LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(1_500_000));
          http.abortCurrent();
        }
      });
      aborter.start();
      List<RuntimeException> escaped = new ArrayList<>();
      int ok = 0;
      int aborted = 0;
      try {
        for (int i = 0; i < 600; i++) {
          try {
            http.request("POST", "/v1/hotkeys/subscribe",
                "{\"topics\":[]}".getBytes(StandardCharsets.UTF_8), "application/json", 5000);
            ok++;
          } catch (IOException e) {
            aborted++;
          } catch (RuntimeException e) {
            escaped.add(e);
          }
        }
      } finally {
        done.set(1);
        aborter.join();
      }
      assertTrue(escaped.isEmpty(), escaped.size() + " requests threw " + (escaped.isEmpty()
          ? "" : escaped.get(0)) + " (ok " + ok + ", aborted " + aborted + ")");
      assertEquals(600, ok + aborted);
      assertTrue(aborted > 0, "no request was aborted");
    } finally {
      server.stop(0);
    }
  }
}
