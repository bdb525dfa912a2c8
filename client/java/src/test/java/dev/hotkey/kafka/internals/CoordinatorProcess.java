package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyConfig;
import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.MergeContract;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/** A real hotkey-coordinator process on loopback (build/bin), with its data in a temp dir. */
final class CoordinatorProcess implements AutoCloseable {
  static final String OPERATOR_TOKEN = "java-test-operator-token";

  final Path dir;
  final int port;
  private Process process;
  private final List<String> tlsArgs = new ArrayList<>();

  CoordinatorProcess(Path dir) throws IOException {
    this(dir, freePort());
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** On {@code port} (a restart keeps the clients' URL), data and config in {@code dir}. */
  CoordinatorProcess(Path dir, int port) throws IOException {
    this.dir = dir;
    this.port = port;
    config("");
  }

  /** Rewrites config.json with {@code extraMembers} (JSON members, e.g. a topics section). */
  CoordinatorProcess config(String extraMembers) throws IOException {
    // Fast windows (as tests/client/coordinator_e2e_test.cc): detection within a second.
    Files.writeString(dir.resolve("config.json"), "{\"epoch_ms\": 200, \"window_epochs\": 5,"
        + " \"plan_interval_ms\": 100, \"warmup_ms\": 0, \"producer_timeout_ms\": 5000,"
        + " \"defaults\": {\"min_rate\": 1, \"hold_ms\": 60000, \"balance_min_fraction\": 1.5}"
        + (extraMembers.isEmpty() ? "" : ", " + extraMembers) + "}");
    return this;
  }

  static Path binary() {
    String env = System.getenv("HOTKEY_COORDINATOR");
    return env != null ? Path.of(env) : TestData.root().resolve("build/bin/hotkey-coordinator");
  }

  static void assumeBuilt() {
    Assumptions.assumeTrue(Files.isExecutable(binary()),
        "build/bin/hotkey-coordinator is not built");
  }

  /**
   * Serves HTTPS only, with this PEM certificate and key (--tls-cert, --tls-key). This class's
   * own requests are plain http, so start() then waits for the port to listen, not /readyz.
   */
  CoordinatorProcess tls(Path cert, Path key) {
    tlsArgs.addAll(List.of("--tls-cert", cert.toString(), "--tls-key", key.toString()));
    return this;
  }

  String url() {
    return "http://127.0.0.1:" + port;
  }

  void start() throws Exception {
    List<String> command = new ArrayList<>(List.of(binary().toString(), "--listen",
        "127.0.0.1:" + port, "--data", dir.resolve("data").toString(), "--config",
        dir.resolve("config.json").toString(), "--operator-token", "ops=" + OPERATOR_TOKEN));
    command.addAll(tlsArgs);
    process = new ProcessBuilder(command)
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("coordinator.log").toFile()))
        .start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IllegalStateException("coordinator exited: "
            + Files.readString(dir.resolve("coordinator.log")));
      }
      try {
        if (!tlsArgs.isEmpty()) {
          new Socket("127.0.0.1", port).close();
          return;
        }
        if (request("GET", "/readyz", null).status == 200) {
          return;
        }
      } catch (IOException e) {
        // not listening yet
      }
      Thread.sleep(50);
    }
    throw new IllegalStateException("coordinator not ready within 60 s");
  }

  /** SIGKILL, as a crash. */
  void kill() throws InterruptedException {
    if (process != null) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
      process = null;
    }
  }

  Http.Answer request(String method, String path, String jsonBody) throws IOException {
    HttpURLConnection c = (HttpURLConnection) URI.create(url() + path).toURL().openConnection();
    c.setConnectTimeout(2000);
    c.setReadTimeout(5000);
    c.setRequestMethod(method);
    c.setRequestProperty("Authorization", "Bearer " + OPERATOR_TOKEN);
    if (jsonBody != null) {
      c.setDoOutput(true);
      c.setRequestProperty("Content-Type", "application/json");
      c.getOutputStream().write(jsonBody.getBytes(StandardCharsets.UTF_8));
    }
    int status = c.getResponseCode();
    var in = status >= 400 ? c.getErrorStream() : c.getInputStream();
    byte[] body = in == null ? new byte[0] : in.readAllBytes();
    return new Http.Answer(status, body);
  }

  @Override
  public void close() {
    if (process != null) {
      process.destroyForcibly();
      process = null;
    }
  }
}
