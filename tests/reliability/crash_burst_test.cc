// Crash consistency of the real hotkey-coordinator process: kill -9 at a seeded random moment of
// a burst of operator writes (pin/unpin/deny/allow from several threads) plus report ingest and
// long-polls, restart on the same RocksDB directory, and check what a crash may and may not do.
// Repeated many times in one test; the seed, kill moments and counts are logged.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../coordinator/test_util.h"
#include "hotkey/key_codec.h"
#include "support/coordinator_process.h"
#include "support/url_encode.h"

namespace hotkey::coordinator::test {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr const char* kToken = "crash-test-operator-token";
const std::vector<std::string> kTopics = {"orders", "payments"};
constexpr int kPartitions = 8;
constexpr int kWriters = 4;
constexpr int kKeysPerWriter = 5;
constexpr int kSendersPerTopic = 2;

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// The real binary with this test's config and a fresh log per run (the shared launcher kills
// it when destroyed, so a failing assertion never leaves a coordinator behind).
class CoordinatorProcess : public test_support::CoordinatorProcess {
 public:
  CoordinatorProcess(const std::filesystem::path& data, const std::filesystem::path& config,
                     const std::filesystem::path& log)
      : test_support::CoordinatorProcess(options(data, config, log)) {}

 private:
  static test_support::CoordinatorOptions options(const std::filesystem::path& data,
                                                  const std::filesystem::path& config,
                                                  const std::filesystem::path& log) {
    test_support::CoordinatorOptions o;
    o.data = data;
    o.config = config;
    o.log = log;
    return o;
  }
};

std::unique_ptr<httplib::Client> client(int port) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
  c->set_connection_timeout(10, 0);
  c->set_read_timeout(30, 0);
  c->set_write_timeout(10, 0);
  return c;
}

enum class KeyState { kNone, kPinned, kDenied };

// One operator write. `reason` is unique per write, so the audit entry and the stored pin or
// deny show exactly which write they came from.
struct Op {
  std::string action;  // pin, unpin, deny, allow
  std::string reason;
  uint32_t salts = 0;
};

// What the test knows about one key: only its writer thread touches it, so the acknowledged
// writes are totally ordered.
struct KeyModel {
  std::string topic;
  std::string key;
  KeyState state = KeyState::kNone;
  std::string reason;  // of the pin or deny in force
  uint32_t salts = 0;
  // (action, reason) of every write acknowledged so far, in order: the audit log must hold
  // exactly these for this key, plus at most the write in flight at the kill.
  std::vector<std::pair<std::string, std::string>> acked;
  std::optional<Op> in_flight;

  void apply(const Op& op) {
    if (op.action == "pin") {
      state = KeyState::kPinned;
      reason = op.reason;
      salts = op.salts;
    } else if (op.action == "deny") {
      state = KeyState::kDenied;
      reason = op.reason;
      salts = 0;
    } else {
      state = KeyState::kNone;
      reason.clear();
      salts = 0;
    }
    acked.emplace_back(op.action, op.action == "pin" || op.action == "deny" ? op.reason : "");
  }
};

std::string audit_reason(const AuditEntry& a) {
  if (a.action != "pin" && a.action != "deny") return "";
  auto d = json::parse(a.detail, nullptr, false);
  return d.is_object() ? d.value("reason", "") : "";
}

// Sends `op` for `m`: the HTTP status, or -1 when no answer came (the process is gone).
int send_op(httplib::Client& c, const KeyModel& m, const Op& op, uint64_t* version) {
  const httplib::Headers auth{{"Authorization", std::string("Bearer ") + kToken}};
  const EncodedKey ek = encode_key(m.key);
  const std::string base = "/v1/topics/" + m.topic;
  auto r = [&] {
    if (op.action == "pin" || op.action == "deny") {
      json body{{std::string(ek.field), ek.value}, {"reason", op.reason}};
      if (op.action == "pin") body["salts"] = op.salts;
      return c.Post(base + (op.action == "pin" ? "/pins" : "/denies"), auth, body.dump(),
                    "application/json");
    }
    return c.Delete(base + (op.action == "unpin" ? "/pins" : "/denies") + "?" +
                        std::string(ek.field) + "=" + test_support::url_encode(ek.value),
                    auth);
  }();
  if (!r) return -1;
  if (r->status == 200) {
    auto j = json::parse(r->body, nullptr, false);
    if (j.is_object()) *version = j.value("version", uint64_t{0});
  }
  return r->status;
}

// Picks a write that changes `m` (so it is visible in the store) from its current state.
Op next_op(const KeyModel& m, std::mt19937_64& rng, const std::string& tag) {
  static const std::vector<std::string> from_none = {"pin", "deny"};
  static const std::vector<std::string> from_pinned = {"pin", "unpin", "deny"};
  static const std::vector<std::string> from_denied = {"deny", "allow", "pin"};
  const auto& choices = m.state == KeyState::kNone     ? from_none
                        : m.state == KeyState::kPinned ? from_pinned
                                                       : from_denied;
  Op op;
  op.action = choices[rng() % choices.size()];
  op.reason = tag;
  if (op.action == "pin") op.salts = static_cast<uint32_t>(2 + rng() % 3);
  return op;
}

struct Burst {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> acked{0};
  std::atomic<uint64_t> reports_ok{0};
  std::atomic<uint64_t> polls{0};
  std::atomic<bool> failed{false};
  std::mutex mu;  // guards max_version and unexpected
  std::map<std::string, uint64_t> max_version;
  std::vector<std::string> unexpected;

  void saw_version(const std::string& topic, uint64_t v) {
    std::lock_guard lock(mu);
    auto& m = max_version[topic];
    m = std::max(m, v);
  }
  void fail(std::string what) {
    std::lock_guard lock(mu);
    unexpected.push_back(std::move(what));
    failed = true;
  }
};

void write_config(const std::filesystem::path& path) {
  // Planning every 50 ms makes the planner's own list writes race the operator writes; the
  // per-client rate limits are off because every writer and sender shares one loopback address.
  const json config{{"warmup_ms", 0},
                    {"plan_interval_ms", 50},
                    {"http_threads", 16},
                    {"max_waiters", 32},
                    {"operator_rate_per_client", 0},
                    {"report_rate_per_client", 0},
                    {"operator_tokens", {{"crash", kToken}}}};
  std::ofstream(path) << config.dump();
}

TEST(CrashBurst, KillNineDuringWriteBurstAndIngestKeepsEveryAcknowledgedWrite) {
  const uint64_t seed =
      env_u64("HOTKEY_CRASH_SEED", static_cast<uint64_t>(std::random_device{}()) << 32 |
                                       static_cast<uint64_t>(std::random_device{}()));
  const uint64_t iterations = std::max<uint64_t>(20, env_u64("HOTKEY_CRASH_ITERATIONS", 20));
  std::printf("crash burst: seed %llu (HOTKEY_CRASH_SEED=%llu reruns it), %llu kills\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(iterations));
  RecordProperty("seed", std::to_string(seed));
  std::mt19937_64 rng(seed);

  TempDir dir;
  const auto data = dir.path() / "data";
  const auto config = dir.path() / "config.json";
  write_config(config);

  // Keys: each writer owns kKeysPerWriter keys, spread over the topics; one per writer is
  // not UTF-8 (key_b64 on the wire, in the store and in the audit log).
  std::vector<std::vector<KeyModel>> keys(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    for (int k = 0; k < kKeysPerWriter; ++k) {
      KeyModel m;
      m.topic = kTopics[static_cast<size_t>(w * kKeysPerWriter + k) % kTopics.size()];
      m.key = k == 0 ? std::string("\xff\x00w", 3) + std::to_string(w)
                     : "w" + std::to_string(w) + "-k" + std::to_string(k);
      keys[static_cast<size_t>(w)].push_back(std::move(m));
    }
  }
  std::map<std::string, uint64_t> max_version;  // highest version seen before any kill
  uint64_t total_acked = 0, total_in_flight = 0, total_landed = 0, total_reports = 0;

  for (uint64_t iter = 0; iter < iterations; ++iter) {
    const auto log = dir.path() / ("coordinator-" + std::to_string(iter) + ".log");
    CoordinatorProcess proc(data, config, log);
    const int port = proc.wait_port();
    ASSERT_NE(port, 0) << "start " << iter << " failed:\n" << proc.log();

    if (iter == 0) {
      // Each topic learns its partition count and publishes a first list before the first
      // burst, so every operator write from here on is planned into a list in its own batch.
      auto c = client(port);
      for (const auto& topic : kTopics) {
        auto r = c->Post("/v1/reports",
                         report_to_json(make_report("setup", topic, kPartitions, 1,
                                                    {{"hot-" + topic, 9000}, {"cold", 1000}})),
                         "application/json");
        ASSERT_TRUE(r && r->status == 200)
            << (r ? r->body : "no answer: " + httplib::to_string(r.error())) << "\n"
            << proc.log();
        auto l = c->Get("/v1/hotkeys?topic=" + topic + "&since=0&wait_ms=30000");
        ASSERT_TRUE(l && l->status == 200) << topic << ": no first list";
      }
    }
    // After a restart: the list each topic publishes never goes below what was seen, and the
    // API shows the same pins and denies as the model.
    {
      auto c = client(port);
      for (const auto& topic : kTopics) {
        auto r = c->Get("/v1/hotkeys?topic=" + topic);
        if (max_version[topic] > 0) {
          ASSERT_TRUE(r && r->status == 200) << topic << " after restart " << iter;
          EXPECT_GE(json::parse(r->body)["version"].get<uint64_t>(), max_version[topic])
              << topic << " version regressed after restart " << iter;
        }
        std::set<std::string> want_pins, want_denies, got_pins, got_denies;
        for (const auto& w : keys) {
          for (const auto& m : w) {
            if (m.topic != topic) continue;
            if (m.state == KeyState::kPinned) want_pins.insert(m.key);
            if (m.state == KeyState::kDenied) want_denies.insert(m.key);
          }
        }
        auto pins = c->Get("/v1/topics/" + topic + "/pins");
        auto denies = c->Get("/v1/topics/" + topic + "/denies");
        ASSERT_TRUE(pins && pins->status == 200 && denies && denies->status == 200);
        const json pins_doc = json::parse(pins->body);
        for (const auto& p : pins_doc["pins"]) {
          got_pins.insert(p.contains("key") ? p["key"].get<std::string>()
                                            : *base64_decode(p["key_b64"].get<std::string>()));
        }
        const json denies_doc = json::parse(denies->body);
        for (const auto& d : denies_doc["denies"]) {
          got_denies.insert(d.contains("key") ? d["key"].get<std::string>()
                                              : *base64_decode(d["key_b64"].get<std::string>()));
        }
        EXPECT_EQ(got_pins, want_pins) << topic << " after restart " << iter;
        EXPECT_EQ(got_denies, want_denies) << topic << " after restart " << iter;
      }
    }

    // The burst: writers, a report sender per topic and a long-poller per topic.
    Burst burst;
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
      const uint64_t wseed = rng();
      threads.emplace_back([&, w, wseed] {
        std::mt19937_64 wrng(wseed);
        auto c = client(port);
        auto& mine = keys[static_cast<size_t>(w)];
        for (uint64_t n = 0; !burst.stop.load(); ++n) {
          KeyModel& m = mine[wrng() % mine.size()];
          Op op = next_op(
              m, wrng,
              "i" + std::to_string(iter) + "-w" + std::to_string(w) + "-" + std::to_string(n));
          m.in_flight = op;
          uint64_t version = 0;
          const int status = send_op(*c, m, op, &version);
          if (status == -1) return;  // killed: this write stays in flight
          if (status != 200) {
            burst.fail(op.action + " on " + printable_key(m.key) + " answered " +
                       std::to_string(status));
            return;
          }
          m.in_flight.reset();
          m.apply(op);
          burst.saw_version(m.topic, version);
          burst.acked.fetch_add(1);
        }
      });
    }
    for (const auto& topic : kTopics) {
      for (int sender = 0; sender < kSendersPerTopic; ++sender) {
        const std::string producer =
            "p" + std::to_string(iter) + "-" + std::to_string(sender) + "-" + topic;
        threads.emplace_back([&, topic, producer, sender] {
          auto c = client(port);
          std::map<std::string, uint64_t> counts{{"hot-" + topic, 6000}, {"warm", 1500}};
          add_tail(counts, 2500, 200, static_cast<uint32_t>(sender));
          for (uint64_t seq = 1; !burst.stop.load(); ++seq) {
            auto r = c->Post("/v1/reports",
                             report_to_json(make_report(producer, topic, kPartitions, seq, counts)),
                             "application/json");
            if (!r) return;
            if (r->status != 200) {
              burst.fail("report answered " + std::to_string(r->status) + ": " + r->body);
              return;
            }
            burst.reports_ok.fetch_add(1);
          }
        });
      }
      threads.emplace_back([&, topic] {
        auto c = client(port);
        uint64_t since = 0;
        while (!burst.stop.load()) {
          auto r = c->Get("/v1/hotkeys?topic=" + topic + "&since=" + std::to_string(since) +
                          "&wait_ms=1000");
          if (!r) return;
          if (r->status == 200) {
            since = json::parse(r->body)["version"].get<uint64_t>();
            burst.saw_version(topic, since);
            burst.polls.fetch_add(1);
          } else if (r->status != 304 && r->status != 404) {
            burst.fail("long-poll answered " + std::to_string(r->status));
            return;
          }
        }
      });
    }
    // Kill at a seeded moment after the first acknowledged write (so every round has some).
    const auto first_ack_deadline = SteadyClock::now() + std::chrono::seconds(60);
    while (burst.acked.load() == 0 && !burst.failed.load() &&
           SteadyClock::now() < first_ack_deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const auto delay_ms = static_cast<int>(rng() % 400);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    const bool alive = proc.running();
    proc.kill9();
    burst.stop = true;
    for (auto& t : threads) t.join();
    {
      std::lock_guard lock(burst.mu);
      for (const auto& u : burst.unexpected) ADD_FAILURE() << "round " << iter << ": " << u;
      for (const auto& [topic, v] : burst.max_version) {
        max_version[topic] = std::max(max_version[topic], v);
      }
    }
    ASSERT_TRUE(alive) << "round " << iter << ": the coordinator died before the kill:\n"
                       << proc.log();
    ASSERT_GT(burst.acked.load(), 0u) << "round " << iter << " acknowledged nothing";

    // The store after the kill: opens cleanly, and holds every acknowledged write, each
    // in-flight write all or nothing, versions at least as seen.
    uint64_t in_flight = 0, landed = 0;
    {
      std::string error;
      auto store = Store::open(data.string(), &error);
      ASSERT_TRUE(store) << "round " << iter << ": store did not open after kill -9: " << error;
      const auto stored = store->load(&error);
      ASSERT_TRUE(error.empty()) << "round " << iter << ": " << error;
      const auto audit = store->audit(SIZE_MAX);  // newest first
      std::map<std::pair<std::string, std::string>,
               std::vector<std::pair<std::string, std::string>>>
          audit_by_key;
      uint64_t prev_seq = UINT64_MAX;
      for (const auto& a : audit) {
        ASSERT_LT(a.seq, prev_seq) << "audit sequence numbers not strictly increasing";
        prev_seq = a.seq;
        audit_by_key[{a.topic, a.key}].emplace_back(a.action, audit_reason(a));
      }
      for (auto& [k, v] : audit_by_key) std::reverse(v.begin(), v.end());
      size_t modelled_entries = 0;
      for (auto& writer : keys) {
        for (auto& m : writer) {
          const auto& got = audit_by_key[{m.topic, m.key}];
          bool op_landed = false;
          if (got != m.acked) {
            auto with = m.acked;
            if (m.in_flight) {
              with.emplace_back(m.in_flight->action,
                                m.in_flight->action == "pin" || m.in_flight->action == "deny"
                                    ? m.in_flight->reason
                                    : "");
            }
            ASSERT_TRUE(m.in_flight && got == with)
                << "round " << iter << ": audit of " << m.topic << "/" << printable_key(m.key)
                << " has " << got.size() << " entries, acknowledged " << m.acked.size()
                << (m.in_flight ? " plus one in flight" : "");
            op_landed = true;
          }
          if (m.in_flight) {
            ++in_flight;
            if (op_landed) {
              ++landed;
              m.apply(*m.in_flight);
            }
            m.in_flight.reset();
          }
          modelled_entries += m.acked.size();
          // The pin or deny in force is the one of the last write that is in the store.
          auto t = stored.find(m.topic);
          const Pin* pin = nullptr;
          const Deny* deny = nullptr;
          if (t != stored.end()) {
            auto p = t->second.pins.find(m.key);
            if (p != t->second.pins.end()) pin = &p->second;
            auto d = t->second.denies.find(m.key);
            if (d != t->second.denies.end()) deny = &d->second;
          }
          const std::string what =
              "round " + std::to_string(iter) + ": " + m.topic + "/" + printable_key(m.key);
          EXPECT_EQ(pin != nullptr, m.state == KeyState::kPinned) << what;
          EXPECT_EQ(deny != nullptr, m.state == KeyState::kDenied) << what;
          if (pin && m.state == KeyState::kPinned) {
            EXPECT_EQ(pin->reason, m.reason) << what;
            EXPECT_EQ(pin->salts, m.salts) << what;
          }
          if (deny && m.state == KeyState::kDenied) {
            EXPECT_EQ(deny->reason, m.reason) << what;
          }
        }
      }
      // No audit entries beyond the modelled writes (nothing duplicated or invented).
      EXPECT_EQ(audit.size(), modelled_entries) << "round " << iter;
      for (const auto& topic : kTopics) {
        auto t = stored.find(topic);
        ASSERT_NE(t, stored.end()) << topic;
        ASSERT_TRUE(t->second.list) << topic << " has no persisted list";
        EXPECT_GE(t->second.list->version, max_version[topic])
            << "round " << iter << ": " << topic << " version regressed";
        EXPECT_GE(t->second.version, t->second.list->version);
        // List, pins and denies are written in one batch: the persisted list agrees with them.
        std::set<std::string> listed_pins, pins;
        for (const auto& k : t->second.list->keys) {
          if (k.source == KeySource::kPinned) listed_pins.insert(k.key);
        }
        for (const auto& [k, p] : t->second.pins) pins.insert(k);
        EXPECT_EQ(listed_pins, pins) << "round " << iter << ": " << topic;
        std::set<std::string> listed_denies(t->second.list->denied.begin(),
                                            t->second.list->denied.end());
        std::set<std::string> denies;
        for (const auto& [k, d] : t->second.denies) denies.insert(k);
        EXPECT_EQ(listed_denies, denies) << "round " << iter << ": " << topic;
      }
    }
    if (HasFailure()) {
      std::fprintf(stderr, "coordinator log of round %llu:\n%s\n",
                   static_cast<unsigned long long>(iter), proc.log().c_str());
      return;
    }
    std::printf(
        "round %2llu: killed %3d ms after the first ack; %3llu writes acknowledged, %llu in "
        "flight (%llu landed), %llu reports, %llu list answers\n",
        static_cast<unsigned long long>(iter), delay_ms,
        static_cast<unsigned long long>(burst.acked.load()),
        static_cast<unsigned long long>(in_flight), static_cast<unsigned long long>(landed),
        static_cast<unsigned long long>(burst.reports_ok.load()),
        static_cast<unsigned long long>(burst.polls.load()));
    total_acked += burst.acked.load();
    total_in_flight += in_flight;
    total_landed += landed;
    total_reports += burst.reports_ok.load();
  }

  // A last clean start and stop: the store the kills left behind still serves and shuts down.
  {
    CoordinatorProcess proc(data, config, dir.path() / "coordinator-final.log");
    const int port = proc.wait_port();
    ASSERT_NE(port, 0) << proc.log();
    auto c = client(port);
    for (const auto& topic : kTopics) {
      auto r = c->Get("/v1/hotkeys?topic=" + topic);
      ASSERT_TRUE(r && r->status == 200);
      EXPECT_GE(json::parse(r->body)["version"].get<uint64_t>(), max_version[topic]);
    }
    EXPECT_EQ(proc.terminate(), 0) << proc.log();
  }
  std::printf(
      "crash burst: %llu kills, %llu writes acknowledged and all present, %llu in flight at a "
      "kill (%llu landed whole, the rest absent whole), %llu reports ingested\n",
      static_cast<unsigned long long>(iterations), static_cast<unsigned long long>(total_acked),
      static_cast<unsigned long long>(total_in_flight),
      static_cast<unsigned long long>(total_landed),
      static_cast<unsigned long long>(total_reports));
  RecordProperty("kills", std::to_string(iterations));
  RecordProperty("acknowledged", std::to_string(total_acked));
  RecordProperty("in_flight", std::to_string(total_in_flight));
  RecordProperty("in_flight_landed", std::to_string(total_landed));
}

}  // namespace
}  // namespace hotkey::coordinator::test
