package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyConfig;
import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.MergeContract;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client's HTTP/1.1 on a plain socket (Http.java): requests aborted from another thread fail
 * with an IOException whatever moment the abort hits (the list subscriber aborts its parked
 * subscription when a topic is added; with HttpURLConnection a RuntimeException once escaped and
 * ended the subscriber thread); one kept-alive connection carries the requests, one the server
 * closed while idle is replaced without failing the request, and a timeout is not retried;
 * answers framed by length, chunks or close are read and malformed ones refused; https verifies
 * the coordinator's certificate and host name (a real coordinator serving TLS).
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
      Settings config = Settings.parse(Map.of("hotkey.coordinator.url",
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

  /**
   * A scripted HTTP server on a raw socket: each connection's requests (head and
   * Content-Length body) are read and handed with the connection's number to the script, which
   * writes the answer bytes (or closes, or stays silent).
   */
  static final class Scripted implements AutoCloseable {
    final ServerSocket server;
    final AtomicInteger connections = new AtomicInteger();
    final AtomicInteger requests = new AtomicInteger();
    final List<String> heads = java.util.Collections.synchronizedList(new ArrayList<>());
    private final Thread acceptor;

    interface Script {
      /** Answers request {@code n} (from 0) on connection {@code conn}; false closes it. */
      boolean answer(int conn, int n, String head, OutputStream out) throws IOException;
    }

    Scripted(Script script) throws IOException {
      server = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
      acceptor = new Thread(() -> {
        while (!server.isClosed()) {
          try {
            Socket s = server.accept();
            int conn = connections.getAndIncrement();
            Thread t = new Thread(() -> serve(s, conn, script));
            t.setDaemon(true);
            t.start();
          } catch (IOException e) {
            return;
          }
        }
      });
      acceptor.setDaemon(true);
      acceptor.start();
    }

    private void serve(Socket s, int conn, Script script) {
      try (s) {
        var in = new java.io.DataInputStream(new java.io.BufferedInputStream(s.getInputStream()));
        for (int n = 0;; n++) {
          StringBuilder head = new StringBuilder();
          int length = 0;
          for (String line; (line = readLine(in)) != null && !line.isEmpty();) {
            head.append(line).append('\n');
            if (line.toLowerCase().startsWith("content-length:")) {
              length = Integer.parseInt(line.substring(15).trim());
            }
          }
          if (head.length() == 0) {
            return;
          }
          in.readFully(new byte[length]);
          requests.incrementAndGet();
          heads.add(head.toString());
          OutputStream out = s.getOutputStream();
          if (!script.answer(conn, n, head.toString(), out)) {
            return;
          }
          out.flush();
        }
      } catch (IOException e) {
        // the client went away
      }
    }

    private static String readLine(java.io.DataInputStream in) throws IOException {
      StringBuilder b = new StringBuilder();
      for (int c; (c = in.read()) >= 0;) {
        if (c == '\n') {
          return b.toString().replace("\r", "");
        }
        b.append((char) c);
      }
      return b.length() == 0 ? null : b.toString();
    }

    Http client(String token) {
      return new Http(Settings.parse(Map.of("hotkey.coordinator.url",
          "http://127.0.0.1:" + server.getLocalPort(), "hotkey.token", token)));
    }

    @Override
    public void close() throws IOException {
      server.close();
    }
  }

  private static void write(OutputStream out, String s) throws IOException {
    out.write(s.getBytes(StandardCharsets.ISO_8859_1));
  }

  private static String get(Http http, String path) throws IOException {
    return new String(http.request("GET", path, null, null, 5000).body, StandardCharsets.UTF_8);
  }

  @Test
  void requestsShareOneKeptAliveConnectionAndSayWhatTheyCarry() throws Exception {
    try (Scripted s = new Scripted((conn, n, head, out) -> {
      write(out, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n" + n % 10 + conn);
      return true;
    })) {
      Http http = s.client("tok");
      for (int i = 0; i < 20; i++) {
        Http.Answer a = http.request("POST", "/v1/reports/batch", new byte[] {1, 2, 3},
            Report.BATCH_CONTENT_TYPE, 5000);
        assertEquals(200, a.status);
        assertEquals(i % 10 + "0", new String(a.body, StandardCharsets.UTF_8));
      }
      assertEquals(1, s.connections.get());
      String head = s.heads.get(0);
      assertTrue(head.startsWith("POST /v1/reports/batch HTTP/1.1\n"), head);
      assertTrue(head.contains("Host: 127.0.0.1:" + s.server.getLocalPort() + "\n"), head);
      assertTrue(head.contains("Authorization: Bearer tok\n"), head);
      assertTrue(head.contains("Content-Type: " + Report.BATCH_CONTENT_TYPE + "\n"), head);
      assertTrue(head.contains("Content-Length: 3\n"), head);
    }
  }

  @Test
  void aConnectionTheServerClosedWhileIdleIsReplacedWithoutFailingTheRequest() throws Exception {
    // Every connection answers one request and then closes without saying so (as a server's
    // keep-alive timeout or a restart does).
    try (Scripted s = new Scripted((conn, n, head, out) -> {
      write(out, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n" + conn % 10);
      out.flush();
      return false;
    })) {
      Http http = s.client("");
      for (int i = 0; i < 5; i++) {
        assertEquals(String.valueOf(i), get(http, "/v1/hotkeys?topic=t"));
        Thread.sleep(20); // the close reaches the client's side before the next request
      }
      assertEquals(5, s.connections.get());
      assertEquals(5, s.requests.get());
    }
  }

  @Test
  void answersFramedByChunksOrByCloseAreReadAndConnectionCloseIsObeyed() throws Exception {
    try (Scripted s = new Scripted((conn, n, head, out) -> {
      if (head.startsWith("GET /chunked")) {
        write(out, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;ext=1\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n");
        return true;
      }
      if (head.startsWith("GET /close")) {
        write(out, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end");
        return false;
      }
      write(out, "HTTP/1.0 404 Not Found\r\nContent-Length: 7\r\n\r\nmissing");
      return true;
    })) {
      Http http = s.client("");
      assertEquals("hello 0123456789", get(http, "/chunked"));
      assertEquals("hello 0123456789", get(http, "/chunked"));
      assertEquals(1, s.connections.get());
      assertEquals("until the end", get(http, "/close"));
      Http.Answer a = http.request("GET", "/other", null, null, 5000);
      assertEquals(404, a.status);
      assertArrayEquals("missing".getBytes(StandardCharsets.UTF_8), a.body);
      // HTTP/1.0 without keep-alive closes too: the next request opens the third connection
      get(http, "/chunked");
      assertEquals(3, s.connections.get());
    }
  }

  @Test
  void aTimeoutIsNotRetriedAndMalformedAnswersAreRefused() throws Exception {
    try (Scripted s = new Scripted((conn, n, head, out) -> {
      if (head.startsWith("GET /silent")) {
        try {
          Thread.sleep(2000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return false;
      }
      if (head.startsWith("GET /garbage")) {
        write(out, "SSH-2.0-OpenSSH\r\n\r\n");
      } else if (head.startsWith("GET /huge")) {
        write(out, "HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n");
      } else if (head.startsWith("GET /short")) {
        write(out, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        return false;
      } else {
        write(out, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        return true;
      }
      return false;
    })) {
      Http http = s.client("");
      get(http, "/ok"); // the connection is kept: a retry would be allowed on it
      long start = System.nanoTime();
      assertThrows(SocketTimeoutException.class,
          () -> http.request("GET", "/silent", null, null, 300));
      assertTrue(System.nanoTime() - start < TimeUnit.MILLISECONDS.toNanos(1500));
      assertEquals(2, s.requests.get(), "a timed-out request was sent again");
      for (String path : List.of("/garbage", "/huge", "/short")) {
        IOException e = assertThrows(IOException.class, () -> get(http, path), path);
        assertTrue(e.getMessage() != null && !e.getMessage().isEmpty(), path);
      }
      assertEquals("ok", get(http, "/ok")); // and the client goes on
    }
  }

  private static void openssl(Path dir, String name, String san) throws Exception {
    Process p = new ProcessBuilder("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=hotkey-test",
        "-addext", "subjectAltName=" + san, "-keyout", dir.resolve(name + ".key").toString(),
        "-out", dir.resolve(name + ".pem").toString())
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, p.waitFor(), "openssl req: " + out);
  }

  @Test
  void httpsVerifiesTheCoordinatorsCertificateAndHostName(@TempDir Path dir) throws Exception {
    CoordinatorProcess.assumeBuilt();
    openssl(dir, "good", "IP:127.0.0.1,DNS:localhost");
    openssl(dir, "other", "DNS:coordinator.example.com");
    for (String cert : List.of("good", "other")) {
      Path home = Files.createDirectories(dir.resolve(cert));
      try (CoordinatorProcess coordinator = new CoordinatorProcess(home)
          .tls(dir.resolve(cert + ".pem"), dir.resolve(cert + ".key"))) {
        coordinator.start();
        int port = coordinator.port;
        String url = "https://127.0.0.1:" + port;
        Http trusting = new Http(Settings.parse(Map.of("hotkey.coordinator.url", url,
            "hotkey.coordinator.ssl.ca.location", dir.resolve(cert + ".pem").toString())));
        if (cert.equals("good")) {
          assertEquals(200, trusting.request("GET", "/readyz", null, null, 5000).status);
          Http.Answer a = trusting.request("GET", "/v1/hotkeys?topic=orders&since=0&wait_ms=0",
              null, null, 5000);
          assertTrue(a.status == 200 || a.status == 304 || a.status == 404, "" + a.status);
          // The JVM's own trust store does not vouch for a self-signed certificate.
          Http jvmTrust = new Http(Settings.parse(Map.of("hotkey.coordinator.url", url)));
          assertThrows(javax.net.ssl.SSLHandshakeException.class,
              () -> jvmTrust.request("GET", "/readyz", null, null, 5000));
          // Plain http to the TLS port is no answer either.
          Http plain = new Http(Settings.parse(Map.of("hotkey.coordinator.url",
              "http://127.0.0.1:" + port)));
          assertThrows(IOException.class, () -> plain.request("GET", "/readyz", null, null,
              2000));
        } else {
          // Trusted certificate, wrong name: refused by the host-name check.
          javax.net.ssl.SSLHandshakeException e = assertThrows(
              javax.net.ssl.SSLHandshakeException.class,
              () -> trusting.request("GET", "/readyz", null, null, 5000));
          assertTrue(String.valueOf(e.getMessage()).contains("127.0.0.1"), "" + e);
        }
      }
    }
  }
}
