// Security settings of the coordinator against real parts: HTTPS with certificates made at test
// time by the openssl CLI, mutual TLS, the client library and hotkeyctl over TLS, token files,
// per-client rate limits and connection limits (slow-loris) over loopback sockets.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hotkey/client/client.h"
#include "hotkey/client/producer.h"
#include "hotkey/client/rdkafka.h"
#include "mock_cluster.h"
#include "rate_limiter.h"
#include "support/child_process.h"
#include "support/coordinator_process.h"
#include "support/eventually.h"
#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using test_support::built_binary;
using test_support::eventually;
using test_support::run_shell;

constexpr const char* kOperatorToken = "alice-operator-token";
const httplib::Headers kOperator{{"Authorization", std::string("Bearer ") + kOperatorToken}};

// A self-signed certificate for 127.0.0.1 / localhost and its key, made by the openssl CLI.
struct Cert {
  std::string cert;
  std::string key;
};

Cert make_cert(const fs::path& dir, const std::string& name) {
  Cert c{(dir / (name + ".crt")).string(), (dir / (name + ".key")).string()};
  std::string out;
  const int rc = run_shell(
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
      " -days 2 -subj /CN=" +
          name + " -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " + c.key + " -out " +
          c.cert,
      &out);
  if (rc != 0) throw std::runtime_error("openssl req failed: " + out);
  return c;
}

std::string report_body(const std::string& producer, uint64_t seq) {
  return report_to_json(make_report(producer, "orders", 8, seq, {{"a", 5}, {"b", 3}}));
}

class Tls : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = make_cert(dir_.path(), "server");
    other_ = make_cert(dir_.path(), "other");
  }
  CoordinatorConfig tls_config() const {
    CoordinatorConfig c = test_config();
    c.tls_cert_file = server_.cert;
    c.tls_key_file = server_.key;
    return c;
  }
  static std::unique_ptr<httplib::Client> https(int port, const std::string& ca) {
    auto c = std::make_unique<httplib::Client>("https://127.0.0.1:" + std::to_string(port));
    if (!ca.empty()) c->set_ca_cert_path(ca);
    c->set_connection_timeout(10, 0);
    c->set_read_timeout(30, 0);
    return c;
  }

  TempDir dir_;
  Cert server_, other_;
};

TEST_F(Tls, HttpsAnswersHealthReportsAndPinsWithTheRightCa) {
  Harness h(tls_config(), true);
  auto c = https(h.port(), server_.cert);
  auto r = c->Get("/healthz");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  r = c->Post("/v1/reports", report_body("p1", 1), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200) << r->body;
  r = c->Post("/v1/topics/orders/pins", kOperator, json{{"key", "k"}, {"reason", "tls"}}.dump(),
              "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  ASSERT_EQ(r->status, 200) << r->body;
  const HotKey* k = find(h.list("orders"), "k");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->source, KeySource::kPinned);
}

TEST_F(Tls, ClientsWithoutTheCaAndPlainHttpAreRefused) {
  Harness h(tls_config(), true);
  // Verification is on by default: no CA given means the system store, which does not hold
  // our self-signed certificate; a different certificate as CA does not vouch for it either.
  for (const std::string& ca : {std::string(), other_.cert}) {
    auto c = https(h.port(), ca);
    auto r = c->Post("/v1/reports", report_body("p1", 1), "application/json");
    ASSERT_FALSE(r) << "status " << r->status;
    EXPECT_EQ(r.error(), httplib::Error::SSLServerVerification) << httplib::to_string(r.error());
  }
  httplib::Client plain("127.0.0.1", h.port());
  plain.set_read_timeout(10, 0);
  auto r = plain.Get("/healthz");
  EXPECT_FALSE(r && r->status == 200);
  // Nothing reached the coordinator.
  EXPECT_FALSE(h.coord().topic("orders").has_value());
}

TEST_F(Tls, MutualTlsRequiresAClientCertificateFromTheClientCa) {
  const Cert client = make_cert(dir_.path(), "client");
  CoordinatorConfig cfg = tls_config();
  cfg.tls_client_ca_file = client.cert;
  Harness h(cfg, true);
  const std::string url = "https://127.0.0.1:" + std::to_string(h.port());

  httplib::Client good(url, client.cert, client.key);
  good.set_ca_cert_path(server_.cert);
  auto r = good.Get("/healthz");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);

  auto none = https(h.port(), server_.cert);
  EXPECT_FALSE(none->Get("/healthz"));
  httplib::Client wrong(url, other_.cert, other_.key);
  wrong.set_ca_cert_path(server_.cert);
  EXPECT_FALSE(wrong.Get("/healthz"));
}

TEST_F(Tls, UnusableFilesAreRefusedWithAMessageNamingThem) {
  const fs::path garbage = dir_.path() / "garbage.pem";
  std::ofstream(garbage) << "not a certificate\n";
  struct Case {
    std::string cert, key, expect;
  };
  for (const auto& [cert, key, expect] : {Case{garbage.string(), server_.key, "tls_cert_file"},
                                          Case{server_.cert, garbage.string(), "tls_key_file"},
                                          Case{server_.cert, other_.key, "does not match"}}) {
    CoordinatorConfig cfg = tls_config();
    cfg.tls_cert_file = cert;
    cfg.tls_key_file = key;
    try {
      Harness h(cfg, true);
      ADD_FAILURE() << "started with cert " << cert << " key " << key;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  }
  CoordinatorConfig only_cert = test_config();
  only_cert.tls_cert_file = server_.cert;
  EXPECT_THROW(only_cert.validate(), std::invalid_argument);

  // The binary: exit code 2 and a message, never a plain-HTTP fallback.
  std::string out;
  const std::string coordinator = built_binary("hotkey-coordinator");
  const std::string data = (dir_.path() / "data").string();
  EXPECT_EQ(run_shell(coordinator + " --listen 127.0.0.1:0 --data " + data + " --tls-cert " +
                          server_.cert,
                      &out),
            2);
  EXPECT_NE(out.find("tls_key_file"), std::string::npos) << out;
  EXPECT_EQ(run_shell(coordinator + " --listen 127.0.0.1:0 --data " + data + " --tls-cert " +
                          server_.cert + " --tls-key " + (dir_.path() / "missing.key").string(),
                      &out),
            2);
  EXPECT_NE(out.find("missing.key"), std::string::npos) << out;
  EXPECT_EQ(run_shell(coordinator + " --listen 127.0.0.1:0 --data " + data + " --tls-cert " +
                          garbage.string() + " --tls-key " + server_.key,
                      &out),
            2);
  EXPECT_NE(out.find("garbage.pem"), std::string::npos) << out;
}

TEST_F(Tls, ClientLibrarySubscribesOverHttpsWithItsCaSetting) {
  Harness h(tls_config(), true);
  auto c = https(h.port(), server_.cert);
  ASSERT_EQ(c->Post("/v1/reports", report_body("p1", 1), "application/json")->status, 200);
  auto r = c->Post("/v1/topics/orders/pins", kOperator,
                   json{{"key", "k"}, {"reason", "tls"}}.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200);
  const uint64_t v = json::parse(r->body)["version"];

  const std::string url = "https://127.0.0.1:" + std::to_string(h.port());
  client::Client producer({{"hotkey.coordinator.url", url},
                           {"hotkey.coordinator.ssl.ca.location", server_.cert},
                           {"hotkey.poll.wait.ms", "1000"},
                           {"hotkey.backoff.max.ms", "200"}});
  const client::TopicId t = producer.topic("orders");
  ASSERT_TRUE(producer.wait_for_version(t, v, std::chrono::seconds(60)));
  EXPECT_GE(producer.stats().topics.at(0).hot_keys, 1u);

  // Without the CA setting the same client never gets a list, and says why in its stats.
  client::Client untrusting({{"hotkey.coordinator.url", url},
                             {"hotkey.poll.wait.ms", "1000"},
                             {"hotkey.backoff.initial.ms", "10"},
                             {"hotkey.backoff.max.ms", "50"}});
  const client::TopicId u = untrusting.topic("orders");
  ASSERT_TRUE(eventually([&] { return untrusting.stats().list_errors >= 2; }));
  EXPECT_FALSE(untrusting.wait_for_version(u, 1, std::chrono::milliseconds(1)));

  EXPECT_THROW(client::Client({{"hotkey.coordinator.url", url},
                               {"hotkey.coordinator.ssl.ca.location",
                                (dir_.path() / "missing.pem").string()}}),
               std::invalid_argument);
  EXPECT_THROW(client::Client({{"hotkey.coordinator.url", "http://127.0.0.1:1"},
                               {"hotkey.coordinator.ssl.ca.location", server_.cert}}),
               std::invalid_argument);
}

TEST_F(Tls, HotkeyctlListNeedsTheCaCertificate) {
  Harness h(tls_config(), true);
  auto c = https(h.port(), server_.cert);
  ASSERT_EQ(c->Post("/v1/reports", report_body("p1", 1), "application/json")->status, 200);
  const std::string base = built_binary("hotkeyctl") +
                           " list --timeout 20 --url https://127.0.0.1:" + std::to_string(h.port());
  std::string out;
  EXPECT_EQ(run_shell(base + " --cacert " + server_.cert, &out), 0) << out;
  EXPECT_NE(out.find("orders"), std::string::npos) << out;
  EXPECT_EQ(run_shell("HOTKEY_CACERT=" + server_.cert + " " + base, &out), 0) << out;

  EXPECT_EQ(run_shell(base, &out), 3) << out;
  EXPECT_NE(out.find("TLS certificate not trusted"), std::string::npos) << out;
  EXPECT_EQ(run_shell(base + " --cacert " + other_.cert, &out), 3) << out;
}

// The client side of the SIGPIPE test, in a forked child whose SIGPIPE has its default action
// (as in an application that never touches signals): a hotkey::Producer and a plain librdkafka
// producer with the partitioner callback, both reporting to and subscribing from an https
// coordinator, producing until told (on `stop_fd`) that the coordinator is gone, for 3 s more,
// then shut down normally. Exits 0; a SIGPIPE kills it with the signal.
[[noreturn]] void produce_through_a_stopped_coordinator(const std::string& bootstrap,
                                                        const std::string& url,
                                                        const std::string& ca, int stop_fd) {
  signal(SIGPIPE, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  auto props = [&](const std::string& id) {
    return client::Properties{
        {"hotkey.coordinator.url", url},     {"hotkey.coordinator.ssl.ca.location", ca},
        {"hotkey.producer.id", id},          {"hotkey.topics", "orders"},
        {"hotkey.report.interval.ms", "50"}, {"hotkey.poll.wait.ms", "200"},
        {"hotkey.http.timeout.ms", "2000"},  {"hotkey.backoff.initial.ms", "10"},
        {"hotkey.backoff.max.ms", "50"}};
  };
  {
    client::Properties p = props("sigpipe-producer");
    p["bootstrap.servers"] = bootstrap;
    p["linger.ms"] = "5";
    hotkey::Producer producer(p);
    client::RdkafkaPartitioner partitioner(props("sigpipe-partitioner"));
    char errstr[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), errstr, sizeof(errstr));
    rd_kafka_conf_set(conf, "linger.ms", "5", errstr, sizeof(errstr));
    partitioner.install(conf);
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (rk == nullptr) _exit(50);
    std::optional<std::chrono::steady_clock::time_point> until;
    for (uint64_t i = 0; !until || std::chrono::steady_clock::now() < *until; ++i) {
      const std::string key = i % 2 == 0 ? "hot" : "k" + std::to_string(i % 100);
      (void)producer.produce("orders", key, "v");
      (void)rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("orders"),
                              RD_KAFKA_V_KEY(key.data(), key.size()),
                              RD_KAFKA_V_VALUE(const_cast<char*>("v"), 1),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
      producer.poll(0);
      rd_kafka_poll(rk, 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      char c = 0;
      if (!until && read(stop_fd, &c, 1) == 1) {
        until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
      }
    }
    rd_kafka_flush(rk, 5000);
    rd_kafka_destroy(rk);
    producer.flush(5000);
  }
  _exit(0);
}

// #17 item 3: OpenSSL writes to a socket the stopped coordinator has closed; without the
// library blocking SIGPIPE in its threads (and around its shutdown), the producer process died
// with SIGPIPE (the loadgen exited 141) when the coordinator stopped mid-run, and at every
// normal shutdown. Over https, with a real mock Kafka cluster.
TEST_F(Tls, ProducerPartitionerAndLoadgenSurviveACoordinatorStoppedMidRun) {
  // The child is forked before this process starts any thread (the mock cluster's, the
  // coordinator's); it learns the addresses through `go`.
  int go[2], stop[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(stop), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(go[1]);
    close(stop[1]);
    std::string msg;
    char buf[512];
    for (ssize_t n; (n = read(go[0], buf, sizeof(buf))) > 0;) msg.append(buf, n);
    const size_t nl = msg.find('\n');
    if (nl == std::string::npos) _exit(51);
    fcntl(stop[0], F_SETFL, O_NONBLOCK);
    produce_through_a_stopped_coordinator(msg.substr(0, nl), msg.substr(nl + 1), server_.cert,
                                          stop[0]);
  }
  close(go[0]);
  close(stop[0]);
  client::test::MockCluster mc(1);
  mc.create_topic("orders", 8);
  mc.create_topic("clicks", 8);  // the loadgen's: it hashes with murmur2, the others crc32
  auto h = std::make_unique<Harness>(tls_config(), true);
  const std::string url = "https://127.0.0.1:" + std::to_string(h->port());
  const std::string msg = mc.bootstraps() + "\n" + url;
  EXPECT_EQ(write(go[1], msg.data(), msg.size()), static_cast<ssize_t>(msg.size()));
  close(go[1]);

  // The loadgen, in the background, for longer than the coordinator lives.
  const fs::path loadgen_out = dir_.path() / "loadgen.out";
  const std::string loadgen = built_binary("hotkey-loadgen") + " --bootstrap " + mc.bootstraps() +
                              " --topic clicks --strategy hotkey --coordinator " + url +
                              " --client-prop hotkey.coordinator.ssl.ca.location=" + server_.cert +
                              " --client-prop hotkey.report.interval.ms=50"
                              " --client-prop hotkey.backoff.initial.ms=10"
                              " --client-prop hotkey.backoff.max.ms=50"
                              " --rate 500 --duration 15 --keys 100";
  std::thread loadgen_thread(
      [&] { run_shell("(" + loadgen + "; echo exit=$?) > " + loadgen_out.string() + " 2>&1"); });

  // Every client has reported (a live TLS connection each), then the coordinator stops.
  EXPECT_TRUE(eventually([&] {
    auto orders = h->coord().topic("orders");
    auto clicks = h->coord().topic("clicks");
    return orders && orders->producers >= 2 && clicks && clicks->producers >= 1;
  }));
  h.reset();
  EXPECT_EQ(write(stop[1], "x", 1), 1);

  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  EXPECT_FALSE(WIFSIGNALED(status)) << "producer process killed by signal " << WTERMSIG(status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  loadgen_thread.join();
  std::ifstream in(loadgen_out);
  std::stringstream out;
  out << in.rdbuf();
  EXPECT_NE(out.str().find("exit=0"), std::string::npos) << out.str();
  close(stop[1]);
}

// ---------------------------------------------------------------- token files

fs::path write_file(const fs::path& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
  return path;
}

std::optional<CoordinatorConfig> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "hotkey-coordinator");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

TEST(TokenFiles, TokensComeFromPrivateFilesAndWork) {
  TempDir dir;
  const fs::path ops = write_file(dir.path() / "operators",
                                  "# operators\nalice=alice-file-token-1\n\nbob=bob-file-token-2\n"
                                  "carol-bare-token\n",
                                  0600);
  const fs::path producer = write_file(dir.path() / "producer", "producer-file-token\n", 0640);
  auto c = parse({"--data", (dir.path() / "d").string(), "--operator-token-file", ops.string(),
                  "--producer-token-file", producer.string()});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->operator_tokens.size(), 3u);
  EXPECT_EQ(c->operator_tokens.find("alice")->second, "alice-file-token-1");
  EXPECT_EQ(c->operator_tokens.find("bob")->second, "bob-file-token-2");
  EXPECT_EQ(c->operator_tokens.find("operator")->second, "carol-bare-token");
  EXPECT_EQ(c->producer_token, "producer-file-token");

  // The same through the config file and the environment.
  const fs::path json_cfg = write_file(
      dir.path() / "c.json",
      json{{"data_dir", (dir.path() / "d").string()}, {"operator_tokens_file", ops.string()}}
          .dump(),
      0600);
  setenv("HOTKEY_PRODUCER_TOKEN_FILE", producer.c_str(), 1);
  c = parse({"--config", json_cfg.string()});
  unsetenv("HOTKEY_PRODUCER_TOKEN_FILE");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->operator_tokens.find("bob")->second, "bob-file-token-2");
  EXPECT_EQ(c->producer_token, "producer-file-token");

  // The loaded tokens guard the API.
  c->listen_port = 0;
  c->warmup_ms = 0;
  Harness h(*c, true);
  auto http = h.client();
  auto r = http->Post("/v1/reports", report_body("p1", 1), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  r = http->Post("/v1/reports", {{"Authorization", "Bearer producer-file-token"}},
                 report_body("p1", 1), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = http->Post("/v1/topics/orders/denies", {{"Authorization", "Bearer bob-file-token-2"}},
                 json{{"key", "k"}, {"reason", "file token"}}.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(h.coord().audit(1).at(0).who, "bob");
}

TEST(TokenFiles, OpenOrMalformedFilesAreRefusedWithoutEchoingTokens) {
  TempDir dir;
  const std::string data = (dir.path() / "d").string();
  struct Case {
    std::string flag, text;
    mode_t mode;
    std::string expect;
  };
  for (const auto& [flag, text, mode, expect] : {
           Case{"--operator-token-file", "alice=secret-token-1\n", 0644, "mode 0644"},
           Case{"--operator-token-file", "alice=secret-token-1\n", 0620, "mode 0620"},
           Case{"--producer-token-file", "secret-token-1\n", 0604, "mode 0604"},
           Case{"--operator-token-file", "# nothing\n\n", 0600, "holds no token"},
           Case{"--operator-token-file", "alice=short\n", 0600, "line 1"},
           Case{"--producer-token-file", "secret-token-1 second\n", 0600, "one token"},
           Case{"--producer-token-file", "short\n", 0600, "at least 8 bytes"},
       }) {
    const fs::path f = write_file(dir.path() / "tokens", text, mode);
    try {
      parse({"--data", data, flag, f.string()});
      ADD_FAILURE() << flag << " accepted mode " << mode << ": " << text;
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(expect), std::string::npos) << what;
      EXPECT_EQ(what.find("secret-token-1"), std::string::npos) << what;
    }
    fs::remove(f);
  }
  EXPECT_THROW(parse({"--data", data, "--operator-token-file", (dir.path() / "none").string()}),
               std::invalid_argument);
  EXPECT_THROW(parse({"--data", data, "--producer-token-file", dir.path().string()}),
               std::invalid_argument);
  // Only one TLS file: refused by the command line as well.
  EXPECT_THROW(parse({"--data", data, "--tls-key", (dir.path() / "k").string()}),
               std::invalid_argument);
}

// ---------------------------------------------------------------- rate limits

// A client bound to `source` (any 127.0.0.0/8 address is loopback on Linux), so the server
// sees a different client address.
std::unique_ptr<httplib::Client> client_from(const char* source, int port) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
  c->set_interface(source);
  c->set_connection_timeout(10, 0);
  c->set_read_timeout(30, 0);
  return c;
}

// The value of the sample `name{labels}` in the coordinator's /metrics text; 0 when absent.
double metric(Harness& h, const std::string& line_prefix) {
  const std::string text = h.metrics().serialize();
  const size_t at = text.find("\n" + line_prefix + " ");
  if (at == std::string::npos) return 0;
  return std::stod(text.substr(at + 2 + line_prefix.size()));
}

TEST(RateLimit, TokenBucketRefillsAndBoundsItsTable) {
  using namespace std::chrono_literals;
  RateLimiter rl(2.0, 3, 2);
  const auto t0 = RateLimiter::Clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(rl.acquire("a", t0).allowed) << i;
  RateLimiter::Decision d = rl.acquire("a", t0);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_s, 1u);
  EXPECT_TRUE(rl.acquire("a", t0 + 500ms).allowed);  // 2/s: one token per 500 ms
  EXPECT_FALSE(rl.acquire("a", t0 + 600ms).allowed);
  EXPECT_TRUE(rl.acquire("b", t0).allowed);
  EXPECT_TRUE(rl.acquire("c", t0).allowed);  // evicts "a", the least recently seen
  EXPECT_EQ(rl.clients(), 2u);
  EXPECT_TRUE(rl.acquire("a", t0 + 600ms).allowed);  // back with a full bucket
  RateLimiter off(0, 1, 1);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(off.acquire("x").allowed);
  EXPECT_EQ(off.clients(), 0u);
  EXPECT_THROW(RateLimiter(-1, 1, 1), std::invalid_argument);
  EXPECT_THROW(RateLimiter(1, 0, 1), std::invalid_argument);
}

TEST(RateLimit, ReportBurstBeyondTheLimitGets429AndOtherClientsAreUnaffected) {
  CoordinatorConfig cfg = test_config();
  // Slow refill so the test's own pace never matters: 3 reports, then one per 100 s.
  cfg.report_rate_per_client = 0.01;
  cfg.report_burst_per_client = 3;
  Harness h(cfg, true);
  auto a = client_from("127.0.0.1", h.port());
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    auto r = a->Post("/v1/reports", report_body("pa", seq), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
  }
  const auto before = h.coord().topic("orders");
  ASSERT_TRUE(before);
  for (uint64_t seq = 4; seq <= 6; ++seq) {
    auto r = a->Post("/v1/reports", report_body("pa", seq), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 429);
    EXPECT_NE(error_of(r).find("report_rate_per_client"), std::string::npos) << r->body;
    const int retry = std::stoi(r->get_header_value("Retry-After"));
    EXPECT_GE(retry, 1);
    EXPECT_LE(retry, 100);
  }
  // Nothing of the refused reports was counted.
  EXPECT_EQ(h.coord().topic("orders")->window_reports, before->window_reports);
  EXPECT_EQ(h.coord().topic("orders")->window_total, before->window_total);
  EXPECT_EQ(metric(h, "hotkey_requests_rejected_total{reason=\"rate_limit\",scope=\"reports\"}"),
            3);

  // Another address has its own bucket; reads are not limited at all.
  auto b = client_from("127.0.0.2", h.port());
  auto r = b->Post("/v1/reports", report_body("pb", 1), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(a->Get("/v1/hotkeys?topic=orders")->status, 200);
}

TEST(RateLimit, OperatorWritesAreLimitedPerAddressBeforeAuthentication) {
  CoordinatorConfig cfg = test_config();
  cfg.operator_rate_per_client = 0.01;
  cfg.operator_burst_per_client = 2;
  Harness h(cfg, true);
  auto a = client_from("127.0.0.1", h.port());
  ASSERT_EQ(a->Post("/v1/reports", report_body("p", 1), "application/json")->status, 200);
  const json pin{{"key", "k"}, {"reason", "limit"}};
  ASSERT_EQ(a->Post("/v1/topics/orders/pins", kOperator, pin.dump(), "application/json")->status,
            200);
  // A wrong token spends a token too: guessing is throttled.
  EXPECT_EQ(a->Post("/v1/topics/orders/denies", {{"Authorization", "Bearer wrong-token-xx"}},
                    json{{"key", "d"}, {"reason", "x"}}.dump(), "application/json")
                ->status,
            401);
  const uint64_t version = h.list("orders").version;
  auto r = a->Delete("/v1/topics/orders/pins?key=k", kOperator);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_NE(error_of(r).find("operator_rate_per_client"), std::string::npos) << r->body;
  EXPECT_FALSE(r->get_header_value("Retry-After").empty());
  EXPECT_EQ(h.list("orders").version, version);
  EXPECT_NE(find(h.list("orders"), "k"), nullptr);
  // Reads and reports from the same address are not operator writes.
  EXPECT_EQ(a->Get("/v1/audit", kOperator)->status, 200);
  EXPECT_EQ(a->Post("/v1/reports", report_body("p", 2), "application/json")->status, 200);
  // Another operator address is unaffected.
  auto b = client_from("127.0.0.2", h.port());
  r = b->Delete("/v1/topics/orders/pins?key=k", kOperator);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(find(h.list("orders"), "k"), nullptr);
  EXPECT_EQ(
      metric(h, "hotkey_requests_rejected_total{reason=\"rate_limit\",scope=\"operator_writes\"}"),
      1);
}

// ---------------------------------------------------------------- connection limits

// A raw TCP connection from `source` to the coordinator; -1 when it cannot connect.
int raw_connect(const char* source, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in local{};
  local.sin_family = AF_INET;
  inet_pton(AF_INET, source, &local.sin_addr);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  timeval tv{60, 0};  // a generous bound for the reads below, never an assertion
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads until the server closes the connection; true when it did (EOF or reset).
bool closed_by_server(int fd, std::string* got) {
  char buf[1024];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      got->append(buf, static_cast<size_t>(n));
      continue;
    }
    return n == 0 || errno == ECONNRESET || errno == EPIPE;
  }
}

TEST(Connections, SlowLorisAndIdleConnectionsAreCutAndFreshReportsSucceed) {
  CoordinatorConfig cfg = test_config();
  cfg.http_threads = 2;
  cfg.max_waiters = 2;  // a pool of 4 workers, max_connections 4 by default
  cfg.max_connections_per_client = 2;
  cfg.request_timeout_s = 1;
  cfg.read_timeout_s = 5;  // the slow-loris below stays under it: only request_timeout cuts
  Harness h(cfg, true);

  // 127.0.0.1 attacks: 6 connections trickle one byte every 100 ms (the first two, which
  // get the address's two workers, into a request body; the others into a header), 4 more
  // connect and send nothing.
  std::vector<int> slow, idle;
  for (int i = 0; i < 6; ++i) {
    int fd = raw_connect("127.0.0.1", h.port());
    ASSERT_GE(fd, 0);
    const std::string start =
        i < 2 ? "POST /v1/reports HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "Content-Length: 100000\r\n\r\n{"
              : "POST /v1/reports HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    ASSERT_EQ(send(fd, start.data(), start.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(start.size()));
    slow.push_back(fd);
  }
  for (int i = 0; i < 4; ++i) {
    idle.push_back(raw_connect("127.0.0.1", h.port()));
    ASSERT_GE(idle.back(), 0);
  }
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    while (!stop.load()) {
      for (int fd : slow) (void)send(fd, "a", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });

  // A producer on another address reports normally, with its usual timeouts.
  auto fresh = client_from("127.0.0.2", h.port());
  auto r = fresh->Post("/v1/reports", report_body("fresh", 1), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200) << r->body;

  // Every slow and idle connection is closed by the server without an answer.
  for (int fd : slow) {
    std::string got;
    EXPECT_TRUE(closed_by_server(fd, &got));
    EXPECT_EQ(got.find("200 OK"), std::string::npos) << got;
  }
  for (int fd : idle) {
    std::string got;
    EXPECT_TRUE(closed_by_server(fd, &got));
  }
  stop = true;
  trickle.join();
  for (int fd : slow) close(fd);
  for (int fd : idle) close(fd);
  EXPECT_GE(metric(h, "hotkey_http_connections_cut_total"), 2);
  // The attacker's address is served again once its connections are gone.
  auto again = client_from("127.0.0.1", h.port());
  ASSERT_TRUE(eventually([&] {
    auto a = again->Post("/v1/reports", report_body("p1", 1), "application/json");
    return a && a->status == 200;
  }));
  // Only the two well-behaved clients' keep-alive connections remain.
  EXPECT_TRUE(eventually([&] { return metric(h, "hotkey_http_connections") <= 2; }));
}

TEST(Connections, ConnectionsBeyondTheLimitGetA503AtOnceAndLongPollsAreNotCut) {
  CoordinatorConfig cfg = test_config();
  cfg.http_threads = 2;
  cfg.max_waiters = 2;
  cfg.max_connections = 2;
  cfg.request_timeout_s = 1;
  Harness h(cfg, true);
  ASSERT_EQ(h.client()->Post("/v1/reports", report_body("p", 1), "application/json")->status, 200);
  ASSERT_TRUE(eventually([&] { return metric(h, "hotkey_http_connections") == 0; }));

  // Two long-polls hold both connections for 3 s, three times request_timeout_s.
  std::vector<std::thread> polls;
  std::atomic<int> not_modified{0};
  for (int i = 0; i < 2; ++i) {
    polls.emplace_back([&] {
      auto c = h.client();
      auto p = c->Get("/v1/hotkeys?topic=orders&since=0&wait_ms=3000");
      if (p && p->status == 304) not_modified.fetch_add(1);
    });
  }
  ASSERT_TRUE(eventually([&] { return h.coord().board().waiters() == 2; }));

  auto c = h.client();
  auto r = c->Get("/healthz");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_NE(error_of(r).find("max_connections=2"), std::string::npos) << r->body;
  EXPECT_EQ(
      metric(h, "hotkey_requests_rejected_total{reason=\"max_connections\",scope=\"connection\"}"),
      1);

  for (auto& t : polls) t.join();
  EXPECT_EQ(not_modified.load(), 2);  // answered, not cut
  EXPECT_EQ(metric(h, "hotkey_http_connections_cut_total"), 0);
  ASSERT_TRUE(eventually([&] {
    auto ok = h.client()->Get("/healthz");
    return ok && ok->status == 200;
  }));
}

// #17 item 10: with max_connections held and the two overflow threads busy with refused
// connections that send nothing, a further connection was closed after ~2 s without an answer.
// Refused plain-HTTP connections are now answered the moment they are accepted.
TEST(Connections, RefusedConnectionsAreAnsweredAtOnceWhileTheOverflowThreadsAreBusy) {
  CoordinatorConfig cfg = test_config();
  cfg.http_threads = 2;
  cfg.max_waiters = 2;
  cfg.max_connections = 2;
  cfg.request_timeout_s = 30;
  Harness h(cfg, true);
  std::vector<int> held;
  for (int i = 0; i < 2; ++i) held.push_back(raw_connect("127.0.0.1", h.port()));
  ASSERT_TRUE(eventually([&] { return metric(h, "hotkey_http_connections") == 2; }));
  // Refused connections that never send a request, more than there are overflow threads.
  for (int i = 0; i < 4; ++i) held.push_back(raw_connect("127.0.0.1", h.port()));
  for (int i = 0; i < 3; ++i) {
    const int fd = raw_connect("127.0.0.1", h.port());
    ASSERT_GE(fd, 0);
    const std::string req = "GET /healthz HTTP/1.1\r\nHost: c\r\n\r\n";
    (void)send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    std::string got;
    EXPECT_TRUE(closed_by_server(fd, &got));
    EXPECT_EQ(got.substr(0, got.find("\r\n")), "HTTP/1.1 503 Service Unavailable") << got;
    EXPECT_NE(got.find("max_connections=2"), std::string::npos) << got;
    EXPECT_NE(got.find("Retry-After: 1"), std::string::npos) << got;
    close(fd);
  }
  for (int fd : held) close(fd);
  EXPECT_EQ(metric(h, "hotkey_http_connections_cut_total"), 0);
  ASSERT_TRUE(eventually([&] {
    auto ok = h.client()->Get("/healthz");
    return ok && ok->status == 200;
  }));
}

// #17 item 12: /readyz is unauthenticated and its probe is a synced store write; it runs at
// most once per second, and the answer says when (checked_at_ms).
TEST(Readiness, ReadyzProbesTheStoreAtMostOncePerSecond) {
  Harness h(test_config(), true);
  auto c = h.client();
  std::set<int64_t> probes;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) {
    auto r = c->Get("/readyz");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    probes.insert(json::parse(r->body).at("checked_at_ms").get<int64_t>());
  }
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LE(static_cast<double>(probes.size()), elapsed_s + 2) << elapsed_s << " s";
  EXPECT_LT(probes.size(), 200u);
}

// #17 item 16: /metrics exposes topic names and rates; metrics_require_token closes it.
TEST(Metrics, MetricsNeedATokenOnlyWhenConfigured) {
  {
    CoordinatorConfig cfg = test_config();
    cfg.producer_token = "producer-token-1";
    Harness h(cfg, true);
    auto r = h.client()->Get("/metrics");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);  // the default: open, as documented
  }
  CoordinatorConfig cfg = test_config();
  cfg.producer_token = "producer-token-1";
  cfg.metrics_require_token = true;
  Harness h(cfg, true);
  auto c = h.client();
  auto r = c->Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(r->body.find("hotkey_"), std::string::npos) << r->body;
  r = c->Get("/metrics", {{"Authorization", "Bearer wrong-token"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  r = c->Get("/metrics", {{"Authorization", "Bearer producer-token-1"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("hotkey_http_connections"), std::string::npos);
  r = c->Get("/metrics", kOperator);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(c->Get("/healthz")->status, 200);  // health stays open
  auto parsed = parse({"--data", (h.dir() / "d").string()});
  ASSERT_TRUE(parsed);
  EXPECT_FALSE(parsed->metrics_require_token);
}

// ---------------------------------------------------------------- HTTP parsing (#17 items 5, 14)

// Sends `bytes` on a fresh connection and returns what the server sends until it closes the
// connection (or 60 s pass).
std::string raw_exchange(int port, const std::string& bytes) {
  const int fd = raw_connect("127.0.0.1", port);
  if (fd < 0) return "";
  (void)send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) got.append(buf, static_cast<size_t>(n));
  close(fd);
  return got;
}

std::string status_line(const std::string& answer) { return answer.substr(0, answer.find("\r\n")); }

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST(HttpParsing, AuthorizationFramingPipeliningAndContentTypesAreStrict) {
  CoordinatorConfig cfg = test_config();
  cfg.producer_token = "producer-token-1";
  Harness h(cfg, true);
  const int port = h.port();
  const std::string report = report_body("p1", 1);
  auto post = [&](const std::string& path, const std::string& headers, const std::string& body) {
    return status_line(raw_exchange(port, "POST " + path + " HTTP/1.1\r\nHost: c\r\n" + headers +
                                              "Content-Length: " + std::to_string(body.size()) +
                                              "\r\nConnection: close\r\n\r\n" + body));
  };
  auto get = [&](const std::string& path, const std::string& headers) {
    return status_line(raw_exchange(
        port, "GET " + path + " HTTP/1.1\r\nHost: c\r\n" + headers + "Connection: close\r\n\r\n"));
  };
  // A NUL (sent raw, or percent-encoded, which httplib decodes) ends nothing: refused.
  EXPECT_EQ(get("/v1/topics", "Authorization: Bearer producer-token-1%00garbage\r\n"),
            "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(
      get("/v1/topics", "Authorization: Bearer producer-token-1" + std::string(1, '\0') + "x\r\n"),
      "HTTP/1.1 401 Unauthorized");
  // The scheme is case-insensitive.
  EXPECT_EQ(get("/v1/topics", "Authorization: bearer producer-token-1\r\n"), "HTTP/1.1 200 OK");
  EXPECT_EQ(get("/v1/topics", "Authorization: BEARER producer-token-1\r\n"), "HTTP/1.1 200 OK");

  // Framing a proxy could read differently is refused.
  const std::string auth = "Authorization: Bearer producer-token-1\r\n";
  EXPECT_EQ(
      status_line(raw_exchange(port, "POST /v1/reports HTTP/1.1\r\nHost: c\r\n" + auth +
                                         "Content-Type: application/json\r\nContent-Length: " +
                                         std::to_string(report.size()) +
                                         "\r\nContent-Length: 5"
                                         "\r\n\r\n" +
                                         report)),
      "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(
      status_line(raw_exchange(port, "POST /v1/reports HTTP/1.1\r\nHost: c\r\n" + auth +
                                         "Content-Type: application/json\r\nContent-Length: 5\r\n"
                                         "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")),
      "HTTP/1.1 400 Bad Request");

  // Pipelined requests are all answered, in order.
  const std::string two = raw_exchange(port,
                                       "GET /healthz HTTP/1.1\r\nHost: c\r\n\r\n"
                                       "GET /v1/topics HTTP/1.1\r\nHost: c\r\n" +
                                           auth + "Connection: close\r\n\r\n");
  EXPECT_EQ(count(two, "HTTP/1.1 200 OK"), 2u) << two;
  EXPECT_NE(two.find("\"topics\""), std::string::npos) << two;

  // Content types: exact media types, case-insensitive, parameters allowed.
  EXPECT_EQ(post("/v1/reports", auth + "Content-Type: application/jsonfoo\r\n", report),
            "HTTP/1.1 415 Unsupported Media Type");
  EXPECT_EQ(post("/v1/reports", auth + "Content-Type: APPLICATION/JSON\r\n", report),
            "HTTP/1.1 200 OK");
  EXPECT_EQ(post("/v1/reports", auth + "Content-Type: application/json; charset=utf-8\r\n",
                 report_body("p1", 2)),
            "HTTP/1.1 200 OK");
  const std::string pin = json{{"key", "k"}, {"reason", "r"}}.dump();
  const std::string op = "Authorization: Bearer " + std::string(kOperatorToken) + "\r\n";
  EXPECT_EQ(post("/v1/topics/orders/pins", op + "Content-Type: text/plain\r\n", pin),
            "HTTP/1.1 415 Unsupported Media Type");
  EXPECT_EQ(post("/v1/topics/orders/pins", op, pin), "HTTP/1.1 415 Unsupported Media Type");
  EXPECT_FALSE(h.coord().pins("orders") && !h.coord().pins("orders")->empty());
  EXPECT_EQ(post("/v1/topics/orders/pins", op + "Content-Type: Application/JSON\r\n", pin),
            "HTTP/1.1 200 OK");
  // Operator writes are authenticated before the body is read, and a refusal changes nothing.
  EXPECT_EQ(post("/v1/topics/orders/denies", "Content-Type: application/json\r\n", pin),
            "HTTP/1.1 401 Unauthorized");
  EXPECT_FALSE(h.coord().denies("orders") && !h.coord().denies("orders")->empty());
}

TEST(HttpParsing, MultiRangeRequestsGetTheWholeBodyOnce) {
  Harness h(test_config(), true);
  const std::string ranges = "Range: bytes=0-" + [] {
    std::string r;
    for (int i = 0; i < 1000; ++i) r += ",0-";
    return r;
  }() + "\r\n";
  const std::string answer = raw_exchange(
      h.port(), "GET /metrics HTTP/1.1\r\nHost: c\r\n" + ranges + "Connection: close\r\n\r\n");
  EXPECT_EQ(status_line(answer), "HTTP/1.1 200 OK");
  EXPECT_LT(answer.size(), 200u * 1024) << "a multi-range answer multiplies the body";
  EXPECT_EQ(count(answer, "# HELP hotkey_http_connections "), 1u);
}

}  // namespace
}  // namespace hotkey::coordinator::test
