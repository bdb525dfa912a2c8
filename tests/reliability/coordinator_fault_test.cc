// Fault tests for the coordinator over its real HTTP API on loopback, with a real RocksDB
// store in a temp dir: a store that can no longer grow its files (disk full), and reports that
// arrive duplicated, very late, or across coordinator clock jumps.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "../coordinator/test_util.h"

namespace hotkey::coordinator::test {
namespace {

using nlohmann::json;

const httplib::Headers kOperator = {{"Authorization", "Bearer alice-operator-token"}};

json body_of(const httplib::Result& r) {
  EXPECT_TRUE(r) << "no HTTP answer";
  if (!r) return json();
  return json::parse(r->body, nullptr, /*allow_exceptions=*/false);
}

int post_report(httplib::Client& c, const Report& r) {
  auto res = c.Post("/v1/reports", report_to_json(r), "application/json");
  return res ? res->status : -1;
}

httplib::Result pin(httplib::Client& c, const std::string& topic, const std::string& key) {
  return c.Post("/v1/topics/" + topic + "/pins", kOperator,
                json{{"key", key}, {"salts", 2}, {"reason", "fault test"}}.dump(),
                "application/json");
}

// The topic's summary after a planning pass (window figures are taken when it plans).
json topic_summary(Harness& h, httplib::Client& c, const std::string& topic) {
  h.coord().tick();
  auto res = c.Get("/v1/topics/" + topic);
  EXPECT_TRUE(res && res->status == 200);
  return res ? json::parse(res->body) : json();
}

// Largest size of the store's write-ahead logs (*.log; RocksDB's info log is "LOG").
uintmax_t largest_wal_bytes(const std::filesystem::path& dir) {
  uintmax_t largest = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".log" && e.is_regular_file()) {
      largest = std::max(largest, e.file_size());
    }
  }
  return largest;
}

// Caps the size any file of this process may grow to (RLIMIT_FSIZE), the unprivileged way to
// give RocksDB a full disk: an append past the cap fails with EFBIG. SIGXFSZ is ignored so the
// failed write returns an error instead of killing the process. Restores both on destruction.
class FileSizeCap {
 public:
  explicit FileSizeCap(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    rlimit capped = saved_;
    capped.rlim_cur = bytes;
    ok_ = setrlimit(RLIMIT_FSIZE, &capped) == 0;
  }
  ~FileSizeCap() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    signal(SIGXFSZ, old_handler_);
  }
  FileSizeCap(const FileSizeCap&) = delete;
  FileSizeCap& operator=(const FileSizeCap&) = delete;
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  sighandler_t old_handler_ = SIG_DFL;
  bool ok_ = false;
};

TEST(CoordinatorFaults, FullDiskFailsWritesCleanlyAndKeepsAcknowledgedState) {
  Harness h(test_config(), /*http=*/true);
  auto c = h.client();
  std::map<std::string, uint64_t> counts{{"hot", 500}};
  add_tail(counts, 500, 50, 1);
  ASSERT_EQ(post_report(*c, make_report("p1", "orders", 8, 1, counts)), 200);

  // Acknowledged operator writes before the fault.
  std::map<std::string, uint64_t> acked_versions;
  for (const std::string key : {"acked-0", "acked-1", "acked-2"}) {
    auto r = pin(*c, "orders", key);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    acked_versions[key] = body_of(r)["version"].get<uint64_t>();
  }
  const uint64_t acked_version = acked_versions["acked-2"];
  ASSERT_EQ(h.list("orders").version, acked_version);
  {
    auto ready = c->Get("/readyz");
    ASSERT_TRUE(ready);
    ASSERT_EQ(ready->status, 200);
  }

  // Cap file growth just above the largest file of the store (RocksDB's info LOG), so the
  // write-ahead log is what runs out of room. Acknowledged writes continue until it is full.
  const auto data = h.dir() / "data";
  uintmax_t largest = 0;
  for (const auto& e : std::filesystem::directory_iterator(data)) {
    if (e.is_regular_file()) largest = std::max(largest, e.file_size());
  }
  ASSERT_GT(largest_wal_bytes(data), 0u) << "the store keeps a write-ahead log in " << data;
  int failed_writes = 0;
  uint64_t full_version = 0;
  {
    FileSizeCap cap(static_cast<rlim_t>(largest + 2048));
    ASSERT_TRUE(cap.ok());
    std::string failure;
    for (int i = 0; i < 5000 && failure.empty(); ++i) {
      const std::string key = "fill-" + std::to_string(i);
      auto r = pin(*c, "orders", key);
      ASSERT_TRUE(r);
      if (r->status == 200) {
        acked_versions[key] = body_of(r)["version"].get<uint64_t>();
      } else {
        failure = r->body;
        EXPECT_GE(r->status, 500) << r->body;
        EXPECT_TRUE(body_of(r).contains("error")) << r->body;
        ++failed_writes;
      }
    }
    ASSERT_FALSE(failure.empty()) << "the write-ahead log never filled up";
    full_version = h.list("orders").version;
    // Every later write must fail with a clear JSON 5xx and change nothing readers see.
    for (const std::string key : {"lost-0", "lost-1"}) {
      auto r = pin(*c, "orders", key);
      ASSERT_TRUE(r);
      EXPECT_GE(r->status, 500) << r->body;
      EXPECT_LT(r->status, 600) << r->body;
      const json b = body_of(r);
      ASSERT_TRUE(b.contains("error")) << r->body;
      EXPECT_FALSE(b["error"].get<std::string>().empty());
      if (r->status >= 500) ++failed_writes;
    }
    auto del = c->Delete("/v1/topics/orders/pins?key=acked-0", kOperator);
    ASSERT_TRUE(del);
    EXPECT_GE(del->status, 500) << del->body;
    // #17 item 8: a pin on a new topic that fails at the store leaves no topic behind (no
    // max_topics slot, no metric series).
    auto fresh = pin(*c, "brand-new", "k");
    ASSERT_TRUE(fresh);
    EXPECT_EQ(fresh->status, 503) << fresh->body;
    EXPECT_FALSE(h.coord().topic("brand-new").has_value());
    auto metrics = c->Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_EQ(metrics->body.find("brand-new"), std::string::npos);

    auto ready = c->Get("/readyz");
    ASSERT_TRUE(ready);
    EXPECT_EQ(ready->status, 503) << ready->body;
    EXPECT_TRUE(body_of(ready).contains("error"));

    // Readers still get the last acknowledged state, unchanged.
    EXPECT_EQ(h.list("orders").version, full_version);
    auto pins = c->Get("/v1/topics/orders/pins", kOperator);
    ASSERT_TRUE(pins);
    ASSERT_EQ(pins->status, 200);
    EXPECT_EQ(body_of(pins)["pins"].size(), acked_versions.size()) << pins->body;
    // Reports keep flowing into the in-memory window while the disk is full.
    EXPECT_EQ(post_report(*c, make_report("p1", "orders", 8, 2, counts)), 200);
  }
  EXPECT_EQ(failed_writes, 3);
  std::printf("acknowledged pins before the disk filled: %zu\n", acked_versions.size());

  // Restart on the same directory: it opens cleanly, every acknowledged pin and audit entry is
  // there, nothing that failed is, and the version did not go back.
  h.restart();
  c = h.client();
  auto ready = c->Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200) << ready->body;
  auto pins = h.coord().pins("orders");
  ASSERT_TRUE(pins);
  EXPECT_EQ(pins->size(), acked_versions.size());
  for (const auto& [key, v] : acked_versions) EXPECT_TRUE(pins->count(key)) << key;
  EXPECT_GE(h.list("orders").version, full_version);
  size_t acked_audit = 0;
  for (const auto& a : h.coord().audit(100000)) {
    EXPECT_EQ(a.key.rfind("lost-", 0), std::string::npos) << "failed write in the audit log";
    if (a.action == "pin" && acked_versions.count(a.key)) ++acked_audit;
  }
  EXPECT_EQ(acked_audit, acked_versions.size());
  // And it takes writes again.
  auto r = pin(*c, "orders", "after-restart");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_GT(body_of(r)["version"].get<uint64_t>(), full_version);
}

// Reports whose producer clock is wildly off, that arrive twice, or late, are counted at most
// once, by arrival, and never make window totals negative or larger than what was sent.
TEST(CoordinatorFaults, DuplicateLateAndSkewedReportsDoNotCorruptWindows) {
  Harness h(test_config(), /*http=*/true);
  auto c = h.client();
  std::map<std::string, uint64_t> counts{{"hot", 300}};
  add_tail(counts, 700, 40, 2);
  uint64_t sent = 0;
  for (uint64_t seq = 1; seq <= 5; ++seq) {
    Report r = make_report("p1", "orders", 8, seq, counts);
    // Producer wall clock jumping around: ten years back, a year ahead, near the epoch.
    const int64_t skew[] = {0, -315'360'000'000, 31'536'000'000, -1'600'000'000'000, 7};
    r.sent_at_ms = h.clock().now_ms() + skew[seq - 1];
    ASSERT_EQ(post_report(*c, r), 200);
    sent += r.total;
    // The same report again (a client retry after a lost answer): acknowledged, not counted.
    ASSERT_EQ(post_report(*c, r), 200);
  }
  json s = topic_summary(h, *c, "orders");
  EXPECT_EQ(s["window_reports"].get<uint64_t>(), 5u) << s.dump();
  EXPECT_DOUBLE_EQ(s["window_total"].get<double>(), static_cast<double>(sent)) << s.dump();

  // A late report (an older sequence number than the last one seen) is not counted twice.
  ASSERT_EQ(post_report(*c, make_report("p1", "orders", 8, 3, counts)), 200);
  s = topic_summary(h, *c, "orders");
  EXPECT_EQ(s["window_reports"].get<uint64_t>(), 5u);

  // The top key's count stays within what was really sent for it.
  auto top = c->Get("/v1/topics/orders/top?n=1");
  ASSERT_TRUE(top && top->status == 200);
  json t = json::parse(top->body);
  const json& items = t.is_array() ? t : t["items"];
  ASSERT_FALSE(items.empty()) << top->body;
  EXPECT_EQ(items[0]["key"], "hot");
  EXPECT_LE(items[0]["count"].get<uint64_t>() - items[0]["error"].get<uint64_t>(), 5u * 300);
}

TEST(CoordinatorFaults, CoordinatorClockJumpsKeepWindowsBounded) {
  Harness h(test_config(), /*http=*/true);
  auto c = h.client();
  std::map<std::string, uint64_t> counts{{"hot", 100}};
  add_tail(counts, 100, 20, 3);
  uint64_t seq = 0;
  ASSERT_EQ(post_report(*c, make_report("p1", "orders", 8, ++seq, counts)), 200);
  const double one = static_cast<double>(make_report("p1", "orders", 8, 1, counts).total);

  // Backwards by an hour: the report lands in an epoch the window still covers at the new
  // "now"; the one from the "future" no longer counts, so totals never exceed what was sent.
  h.clock().advance_ms(-3'600'000);
  ASSERT_EQ(post_report(*c, make_report("p1", "orders", 8, ++seq, counts)), 200);
  h.coord().tick();
  json s = topic_summary(h, *c, "orders");
  EXPECT_GE(s["window_total"].get<double>(), one);
  EXPECT_LE(s["window_total"].get<double>(), 2 * one);

  // Forward by a day: everything before is out of the window, new reports count alone.
  h.clock().advance_ms(24 * 3'600'000);
  h.coord().tick();
  s = topic_summary(h, *c, "orders");
  EXPECT_EQ(s["window_total"].get<double>(), 0.0) << s.dump();
  ASSERT_EQ(post_report(*c, make_report("p1", "orders", 8, ++seq, counts)), 200);
  s = topic_summary(h, *c, "orders");
  EXPECT_EQ(s["window_total"].get<double>(), one) << s.dump();
  EXPECT_EQ(s["window_reports"].get<uint64_t>(), 1u);

  // Versions never go back across the jumps (pins make changes deterministic).
  auto r1 = pin(*c, "orders", "k1");
  ASSERT_TRUE(r1 && r1->status == 200);
  h.clock().advance_ms(-48 * 3'600'000);
  auto r2 = pin(*c, "orders", "k2");
  ASSERT_TRUE(r2 && r2->status == 200);
  EXPECT_GT(body_of(r2)["version"].get<uint64_t>(), body_of(r1)["version"].get<uint64_t>());
}

// Found by fuzz/report_binary: the binary form carries the separator as raw bytes, and one
// that is not UTF-8 was accepted, adopted for the topic, and then made every list of that topic
// unencodable as JSON (an exception out of the planning thread ends the process).
TEST(CoordinatorFaults, BinaryReportWithNonUtf8SeparatorIsRejected) {
  Harness h(test_config(), /*http=*/true);
  auto c = h.client();
  std::map<std::string, uint64_t> counts{{"hot", 10}};
  Report r = make_report("p1", "orders", 8, 1, counts);
  r.separator = "\xdd";
  auto res = c->Post("/v1/reports", encode_report_binary(r), std::string(kReportBinaryContentType));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_NE(res->body.find("separator"), std::string::npos) << res->body;
  auto pin_res = pin(*c, "orders", "k");
  ASSERT_TRUE(pin_res);
  EXPECT_EQ(pin_res->status, 200) << pin_res->body;
  h.coord().tick();
  EXPECT_NO_THROW(list_to_json(h.list("orders")));
}

}  // namespace
}  // namespace hotkey::coordinator::test
