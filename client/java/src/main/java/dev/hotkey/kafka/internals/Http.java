package dev.hotkey.kafka.internals;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;

/**
 * The coordinator's HTTP API from the background threads (never the send path): one request at
 * a time per instance over one kept-alive HTTP/1.1 connection, abortable from another thread
 * (stopping a parked long-poll).
 *
 * <p>A plain socket, not HttpURLConnection: the reporter sends two requests a second, too few
 * for the JIT to compile HttpURLConnection's long paths (header maps, the keep-alive cache,
 * URL handlers) soon, so each report ran them interpreted, about 1 ms of CPU, and their
 * compilation went on for minutes (docs/BENCHMARKS.md "The reporter's HTTP client"). The client
 * connects directly (no proxy, as the C++ client), verifies an https:// coordinator's
 * certificate and host name, and reads answers framed by Content-Length, chunked or by close.
 */
final class Http {
  /** An answer: status and body. */
  static final class Answer {
    final int status;
    final byte[] body;

    Answer(int status, byte[] body) {
      this.status = status;
      this.body = body;
    }
  }

  static final int MAX_BODY = 64 << 20;
  private static final int MAX_HEADER_LINE = 16 << 10;
  private static final int MAX_HEADERS = 100;

  private final Settings config;
  private final SSLSocketFactory ssl; // null: plain http
  private final String host; // for the socket (no brackets) and the certificate check
  private final int port;
  private final String basePath; // the URL's path, before every request's
  private final String hostHeader;

  // The kept-alive connection: only the requesting thread touches these.
  private Socket socket;
  private InputStream in;
  private final byte[] buf = new byte[8192]; // what was read from in and not yet used: [pos, lim)
  private int pos;
  private int lim;
  private OutputStream out;
  private byte[] line = new byte[256]; // the answer's head, a line at a time
  private boolean answerStarted; // a byte of this exchange's answer has come

  private volatile Socket current; // the socket of the request in flight, for abort and close
  private volatile int aborts;
  private volatile boolean closed;

  Http(Settings config) {
    this.config = config;
    URI uri = URI.create(config.coordinatorUrl);
    boolean tls = "https".equalsIgnoreCase(uri.getScheme());
    this.ssl = !tls ? null
        : config.sslCaLocation.isEmpty() ? (SSLSocketFactory) SSLSocketFactory.getDefault()
        : trustFrom(config.sslCaLocation);
    String h = uri.getHost();
    if (h == null) {
      throw new org.apache.kafka.common.config.ConfigException("hotkey.coordinator.url",
          config.coordinatorUrl, "expected http://HOST:PORT or https://HOST:PORT");
    }
    this.host = h.startsWith("[") && h.endsWith("]") ? h.substring(1, h.length() - 1) : h;
    this.port = uri.getPort() >= 0 ? uri.getPort() : tls ? 443 : 80;
    this.hostHeader = uri.getPort() >= 0 ? h + ":" + uri.getPort() : h;
    String path = uri.getRawPath() == null ? "" : uri.getRawPath();
    this.basePath = path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
  }

  private static SSLSocketFactory trustFrom(String pemFile) {
    try (InputStream in = Files.newInputStream(Path.of(pemFile))) {
      KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
      ks.load(null, null);
      int i = 0;
      for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        ks.setCertificateEntry("ca" + i++, c);
      }
      TrustManagerFactory tmf =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(ks);
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(null, tmf.getTrustManagers(), null);
      return ctx.getSocketFactory();
    } catch (Exception e) {
      throw new org.apache.kafka.common.config.ConfigException(
          "hotkey.coordinator.ssl.ca.location", pemFile, "cannot load the CA certificates: " + e);
    }
  }

  /** One request; readTimeoutMs bounds each wait for the answer. IOException on any failure. */
  Answer request(String method, String pathAndQuery, byte[] body, String contentType,
      int readTimeoutMs) throws IOException {
    byte[] head = head(method, pathAndQuery, body, contentType);
    int abortsBefore = aborts;
    boolean reused = socket != null;
    try {
      return exchange(method, head, body, readTimeoutMs);
    } catch (IOException | RuntimeException e) {
      // A kept-alive connection the coordinator closed while it was idle (its
      // keep_alive_timeout_s, a restart) fails before the first byte of the answer: the request
      // goes once more on a new connection, as HTTP clients do. A report sent twice is harmless
      // (the coordinator drops a repeated (producer, seq)); a timeout or an abort is not retried.
      if (reused && !answerStarted && e instanceof IOException
          && !(e instanceof java.net.SocketTimeoutException) && !closed
          && aborts == abortsBefore) {
        try {
          return exchange(method, head, body, readTimeoutMs);
        } catch (IOException | RuntimeException again) {
          throw asIo(again);
        }
      }
      throw asIo(e);
    }
  }

  // Closing the socket from abortCurrent() or close() can surface as any exception inside the
  // socket and TLS layers: a failed request, as any other, never the end of the calling thread.
  private static IOException asIo(Exception e) {
    return e instanceof IOException ? (IOException) e : new IOException(e.toString(), e);
  }

  private byte[] head(String method, String pathAndQuery, byte[] body, String contentType) {
    StringBuilder b = new StringBuilder(256);
    b.append(method).append(' ').append(basePath).append(pathAndQuery).append(" HTTP/1.1\r\n");
    b.append("Host: ").append(hostHeader).append("\r\n");
    b.append("User-Agent: hotkey-kafka-client\r\nAccept: */*\r\n");
    if (!config.token.isEmpty()) {
      b.append("Authorization: Bearer ").append(config.token).append("\r\n");
    }
    if (body != null) {
      b.append("Content-Type: ").append(contentType).append("\r\n");
      b.append("Content-Length: ").append(body.length).append("\r\n");
    }
    b.append("\r\n");
    return b.toString().getBytes(StandardCharsets.ISO_8859_1);
  }

  private Answer exchange(String method, byte[] head, byte[] body, int readTimeoutMs)
      throws IOException {
    if (closed) {
      throw new IOException("closed");
    }
    if (socket == null) {
      connect();
    }
    current = socket;
    answerStarted = false;
    boolean keep = false;
    try {
      if (closed) {
        throw new IOException("closed");
      }
      socket.setSoTimeout(readTimeoutMs);
      out.write(head);
      if (body != null) {
        out.write(body);
      }
      out.flush();
      Framing f;
      do { // 1xx interim answers (none are asked for) are skipped
        f = new Framing();
        statusLine(f);
        headers(f);
      } while (f.status >= 100 && f.status < 200);
      final int status = f.status;
      byte[] answer;
      if (method.equals("HEAD") || status == 204 || status == 304) {
        answer = new byte[0];
      } else if (f.chunked) {
        answer = chunked();
      } else if (f.length >= 0) {
        answer = exactly(f.length);
      } else {
        answer = untilClose();
        f.close = true;
      }
      keep = !f.close && pos == lim; // bytes past the answer: not a connection to trust
      return new Answer(status, answer);
    } finally {
      current = null;
      if (!keep) {
        drop();
      }
    }
  }

  private void connect() throws IOException {
    Socket s = new Socket();
    current = s;
    try {
      if (closed) {
        throw new IOException("closed");
      }
      s.connect(new InetSocketAddress(host, port), config.httpTimeoutMs);
      s.setTcpNoDelay(true);
      if (ssl != null) {
        s.setSoTimeout(config.httpTimeoutMs);
        SSLSocket t = (SSLSocket) ssl.createSocket(s, host, port, true);
        current = t;
        SSLParameters p = t.getSSLParameters();
        p.setEndpointIdentificationAlgorithm("HTTPS"); // the certificate must name the host
        t.setSSLParameters(p);
        t.startHandshake();
        s = t;
      }
      socket = s;
      in = s.getInputStream();
      pos = 0;
      lim = 0;
      out = s.getOutputStream();
    } catch (IOException | RuntimeException e) {
      current = null;
      s.close();
      throw e;
    }
  }

  private void drop() {
    Socket s = socket;
    socket = null;
    in = null;
    pos = 0;
    lim = 0;
    out = null;
    if (s != null) {
      try {
        s.close();
      } catch (IOException e) {
        // closing: nothing to keep
      }
    }
  }

  /** An answer's head: its status and how its body ends. */
  private static final class Framing {
    int status;
    long length = -1;
    boolean chunked;
    boolean close;
  }

  private void statusLine(Framing f) throws IOException {
    int n = readLine(true);
    // "HTTP/1.1 200 OK": the version, then three digits
    if (n < 12 || line[0] != 'H' || line[1] != 'T' || line[2] != 'T' || line[3] != 'P'
        || line[4] != '/' || line[8] != ' ') {
      throw new IOException("not an HTTP answer: " + text(n));
    }
    f.close = line[5] == '1' && line[7] == '0'; // HTTP/1.0 closes unless it says keep-alive
    int status = 0;
    for (int i = 9; i < 12; i++) {
      if (line[i] < '0' || line[i] > '9') {
        throw new IOException("bad HTTP status line: " + text(n));
      }
      status = status * 10 + (line[i] - '0');
    }
    f.status = status;
  }

  private void headers(Framing f) throws IOException {
    for (int count = 0;; count++) {
      int n = readLine(false);
      if (n == 0) {
        return;
      }
      if (count == MAX_HEADERS) {
        throw new IOException("more than " + MAX_HEADERS + " header lines");
      }
      String h = text(n);
      int colon = h.indexOf(':');
      if (colon <= 0) {
        throw new IOException("bad header line: " + h);
      }
      String name = h.substring(0, colon).trim();
      String value = h.substring(colon + 1).trim();
      if (name.equalsIgnoreCase("Content-Length")) {
        try {
          f.length = Long.parseLong(value);
        } catch (NumberFormatException e) {
          throw new IOException("bad Content-Length: " + value);
        }
        if (f.length < 0 || f.length > MAX_BODY) {
          throw new IOException("Content-Length " + value + " (the limit is 64 MiB)");
        }
      } else if (name.equalsIgnoreCase("Transfer-Encoding")) {
        f.chunked = value.toLowerCase(java.util.Locale.ROOT).endsWith("chunked");
        if (!f.chunked) {
          throw new IOException("unsupported Transfer-Encoding: " + value);
        }
      } else if (name.equalsIgnoreCase("Connection")) {
        String v = value.toLowerCase(java.util.Locale.ROOT);
        if (v.contains("close")) {
          f.close = true;
        } else if (v.contains("keep-alive")) {
          f.close = false;
        }
      }
    }
  }

  /** Reads more of the answer into buf; false at the end of the stream. */
  private boolean fill() throws IOException {
    if (pos == lim) {
      pos = 0;
      lim = 0;
    }
    int n = in.read(buf, lim, buf.length - lim);
    if (n <= 0) {
      return false;
    }
    answerStarted = true;
    lim += n;
    return true;
  }

  /**
   * One CRLF- (or LF-) ended line into {@code line} (grown as needed), without the end. The
   * bytes are scanned in buf, not read one call at a time: the reporter's requests are too few
   * for the JIT, and an interpreted call a byte was most of a request's cost.
   */
  private int readLine(boolean first) throws IOException {
    int n = 0;
    for (;;) {
      if (pos == lim && !fill()) {
        throw new EOFException(first && n == 0 ? "the connection closed before an answer"
            : "the connection closed inside the answer's head");
      }
      int end = pos;
      while (end < lim && buf[end] != '\n') {
        end++;
      }
      int take = end - pos;
      if (n + take > line.length) {
        if (n + take > MAX_HEADER_LINE) {
          throw new IOException("an answer header line longer than " + MAX_HEADER_LINE);
        }
        line = java.util.Arrays.copyOf(line, Math.max(n + take, line.length * 2));
      }
      System.arraycopy(buf, pos, line, n, take);
      n += take;
      pos = end;
      if (end < lim) { // the '\n'
        pos++;
        return n > 0 && line[n - 1] == '\r' ? n - 1 : n;
      }
    }
  }

  private String text(int n) {
    return new String(line, 0, n, StandardCharsets.ISO_8859_1);
  }

  private byte[] exactly(long length) throws IOException {
    byte[] b = new byte[(int) length];
    int off = Math.min(b.length, lim - pos);
    System.arraycopy(buf, pos, b, 0, off);
    pos += off;
    while (off < b.length) {
      int n = in.read(b, off, b.length - off);
      if (n < 0) {
        throw new EOFException("the connection closed inside the answer's body");
      }
      off += n;
    }
    return b;
  }

  private byte[] chunked() throws IOException {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    for (;;) {
      String size = text(readLine(false));
      int semi = size.indexOf(';');
      long n;
      try {
        n = Long.parseLong((semi >= 0 ? size.substring(0, semi) : size).trim(), 16);
      } catch (NumberFormatException e) {
        throw new IOException("bad chunk size: " + size);
      }
      if (n < 0 || body.size() + n > MAX_BODY) {
        throw new IOException("answer larger than 64 MiB");
      }
      if (n == 0) {
        while (readLine(false) != 0) {
          // trailers: nothing here uses them
        }
        return body.toByteArray();
      }
      body.write(exactly(n));
      if (readLine(false) != 0) {
        throw new IOException("a chunk longer than its size");
      }
    }
  }

  private byte[] untilClose() throws IOException {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.write(buf, pos, lim - pos);
    pos = lim;
    for (int n; (n = in.read(buf)) > 0;) {
      body.write(buf, 0, n);
      if (body.size() > MAX_BODY) {
        throw new IOException("answer larger than 64 MiB");
      }
    }
    return body.toByteArray();
  }

  /** Aborts the request in flight, if any (later requests go ahead, on a new connection). */
  void abortCurrent() {
    aborts++;
    closeQuietly(current);
  }

  /** Aborts the request in flight (if any) and every later one. */
  void close() {
    closed = true;
    closeQuietly(current);
  }

  private static void closeQuietly(Socket s) {
    if (s != null) {
      try {
        s.close();
      } catch (IOException e) {
        // closing: nothing to keep
      }
    }
  }
}
