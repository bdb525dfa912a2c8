package dev.hotkey.kafka;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;

/**
 * The coordinator's HTTP API from the background threads (never the send path): one request at
 * a time per instance, abortable from another thread (stopping a parked long-poll).
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

  private final HotkeyConfig config;
  private final SSLSocketFactory ssl;
  private volatile HttpURLConnection current;
  private volatile boolean closed;

  Http(HotkeyConfig config) {
    this.config = config;
    this.ssl = config.sslCaLocation.isEmpty() ? null : trustFrom(config.sslCaLocation);
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

  /** One request; readTimeoutMs bounds the wait for the answer. IOException on any failure. */
  Answer request(String method, String pathAndQuery, byte[] body, String contentType,
      int readTimeoutMs) throws IOException {
    if (closed) {
      throw new IOException("closed");
    }
    HttpURLConnection c =
        (HttpURLConnection) URI.create(config.coordinatorUrl + pathAndQuery).toURL()
            .openConnection();
    if (ssl != null && c instanceof HttpsURLConnection) {
      ((HttpsURLConnection) c).setSSLSocketFactory(ssl);
    }
    current = c;
    try {
      if (closed) {
        throw new IOException("closed");
      }
      c.setConnectTimeout(config.httpTimeoutMs);
      c.setReadTimeout(readTimeoutMs);
      c.setRequestMethod(method);
      c.setUseCaches(false);
      if (!config.token.isEmpty()) {
        c.setRequestProperty("Authorization", "Bearer " + config.token);
      }
      if (body != null) {
        c.setDoOutput(true);
        c.setRequestProperty("Content-Type", contentType);
        c.setFixedLengthStreamingMode(body.length);
        try (OutputStream out = c.getOutputStream()) {
          out.write(body);
        }
      }
      int status = c.getResponseCode();
      InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream();
      byte[] answer = new byte[0];
      if (in != null) {
        try (InputStream stream = in) {
          answer = readAll(stream);
        }
      }
      return new Answer(status, answer);
    } catch (RuntimeException e) {
      // HttpURLConnection throws unchecked exceptions (a NullPointerException inside) when
      // disconnect() from abortCurrent() or close() races with the request: a failed request,
      // as any other, not the end of the calling thread.
      throw new IOException("request aborted: " + e, e);
    } finally {
      current = null;
    }
  }

  private static byte[] readAll(InputStream in) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buf = new byte[8192];
    for (int n; (n = in.read(buf)) > 0;) {
      out.write(buf, 0, n);
      if (out.size() > (64 << 20)) {
        throw new IOException("answer larger than 64 MiB");
      }
    }
    return out.toByteArray();
  }

  /** Aborts the request in flight, if any (later requests go ahead). */
  void abortCurrent() {
    HttpURLConnection c = current;
    if (c != null) {
      c.disconnect();
    }
  }

  /** Aborts the request in flight (if any) and every later one. */
  void close() {
    closed = true;
    HttpURLConnection c = current;
    if (c != null) {
      c.disconnect();
    }
  }
}
