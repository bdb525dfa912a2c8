// The backup procedures of docs/OPERATIONS.md, run for real: a coordinator's data directory
// copied after a clean stop (and, when Debian's rocksdb-tools is installed, an `ldb checkpoint`
// of it) starts a new coordinator that serves the same pins, denies, list and version. Also
// the upgrade section's promise that a foreign directory is refused with a clear error.
#include <httplib.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "deploy_coordinator.h"
#include "gtest/gtest.h"
#include "support/child_process.h"
#include "support/temp_dir.h"

namespace hotkey::deploy_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test_support::coordinator_binary;
using test_support::TempDir;

httplib::Headers auth(const char* token) {
  return {{"Authorization", std::string("Bearer ") + token}};
}

const char* kReport = R"({
  "producer": "backup-test", "topic": "payments", "partitions": 6, "hash": "murmur2",
  "window_ms": 1000, "sample_rate": 1.0, "total": 600,
  "partition_counts": [100, 100, 100, 100, 100, 100], "seq": 1,
  "sketch": {"capacity": 8, "min": 0, "items": [{"key": "acct-9", "count": 50, "error": 0}]}
})";

struct State {
  uint64_t version = 0;
  bool pinned_listed = false;  // "merchant-1" in keys, source pinned
  bool denied_listed = false;  // "acct-9" in denied
  std::string list_json;
};

State read_state(int port) {
  httplib::Client cli("127.0.0.1", port);
  auto res = cli.Get("/v1/hotkeys?topic=payments", auth(kProducerToken));
  State s;
  if (!res || res->status != 200) return s;
  s.list_json = res->body;
  json list = json::parse(res->body);
  s.version = list["version"].get<uint64_t>();
  for (const auto& k : list["keys"]) {
    if (k.value("key", "") == "merchant-1" && k.value("source", "") == "pinned") {
      s.pinned_listed = true;
    }
  }
  for (const auto& d : list["denied"]) s.denied_listed |= d.value("key", "") == "acct-9";
  return s;
}

// Starts a coordinator on `data`, runs `fn(port)`, stops it cleanly.
template <typename Fn>
void with_coordinator(const std::string& bin, const fs::path& data, const fs::path& log, Fn fn) {
  std::string error;
  auto proc = test_support::start_coordinator(deploy_options(bin, data, log), &error);
  ASSERT_NE(proc, nullptr) << error;
  fn(proc->port());
  ASSERT_EQ(proc->terminate(), 0) << "unclean exit on SIGTERM; log:\n" << proc->log();
}

class BackupRestore : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = coordinator_binary();
    if (!fs::exists(bin_)) GTEST_SKIP() << bin_ << " is not built yet";
    tmp_ = std::make_unique<TempDir>();
    // The original coordinator: a report, a pin, a deny; then a clean stop (the backup point).
    with_coordinator(bin_, original(), tmp_->path() / "original.log", [&](int port) {
      httplib::Client cli("127.0.0.1", port);
      auto r = cli.Post("/v1/reports", auth(kProducerToken), kReport, "application/json");
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 200) << r->body;
      auto pin = cli.Post("/v1/topics/payments/pins", auth(kOperatorToken),
                          R"({"key": "merchant-1", "salts": 3, "reason": "backup test"})",
                          "application/json");
      ASSERT_TRUE(pin);
      ASSERT_EQ(pin->status, 200) << pin->body;
      auto deny = cli.Post("/v1/topics/payments/denies", auth(kOperatorToken),
                           R"({"key": "acct-9", "reason": "strict order"})", "application/json");
      ASSERT_TRUE(deny);
      ASSERT_EQ(deny->status, 200) << deny->body;
      before_ = read_state(port);
    });
    ASSERT_GT(before_.version, 0u);
    ASSERT_TRUE(before_.pinned_listed) << before_.list_json;
    ASSERT_TRUE(before_.denied_listed) << before_.list_json;
  }

  fs::path original() const { return tmp_->path() / "data"; }

  // A coordinator on `restored` serves what the original had, with no version regression.
  void expect_restored(const fs::path& restored, const std::string& name) {
    with_coordinator(bin_, restored, tmp_->path() / (name + ".log"), [&](int port) {
      State after = read_state(port);
      EXPECT_GE(after.version, before_.version) << name << ": version went back";
      EXPECT_TRUE(after.pinned_listed) << name << ": pin lost: " << after.list_json;
      EXPECT_TRUE(after.denied_listed) << name << ": deny lost: " << after.list_json;
      httplib::Client cli("127.0.0.1", port);
      auto audit = cli.Get("/v1/audit?limit=10", auth(kOperatorToken));
      ASSERT_TRUE(audit);
      ASSERT_EQ(audit->status, 200);
      EXPECT_EQ(json::parse(audit->body)["entries"].size(), 2u) << name << ": " << audit->body;
    });
  }

  std::string bin_;
  std::unique_ptr<TempDir> tmp_;
  State before_;
};

TEST_F(BackupRestore, StopCopyStartKeepsPinsDeniesAuditAndVersions) {
  const fs::path copy = tmp_->path() / "copy";
  fs::copy(original(), copy, fs::copy_options::recursive);
  expect_restored(copy, "copy");
}

TEST_F(BackupRestore, LdbCheckpointOfAStoppedStoreRestores) {
  if (std::system("command -v ldb >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "ldb not found (Debian package rocksdb-tools; scripts/deps-deploy.sh)";
  }
  const fs::path ckpt = tmp_->path() / "checkpoint";
  const std::string cmd = "ldb --db='" + original().string() + "' checkpoint --checkpoint_dir='" +
                          ckpt.string() + "' > '" + (tmp_->path() / "ldb.log").string() + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "ldb checkpoint failed: " << cmd;
  expect_restored(ckpt, "checkpoint");
}

TEST(DataDirectory, ForeignDirectoryIsRefusedWithAClearError) {
  const std::string bin = coordinator_binary();
  if (!fs::exists(bin)) GTEST_SKIP() << bin << " is not built yet";
  TempDir tmp;
  const fs::path foreign = tmp.path() / "foreign";
  fs::create_directories(foreign);
  std::ofstream(foreign / "notes.txt") << "not a coordinator store\n";
  test_support::ChildSpec spec;
  spec.binary = bin;
  spec.args = {"--listen", "127.0.0.1:0", "--data", foreign.string()};
  spec.env = deploy_options(bin, foreign, "").env;
  spec.stdout_file = tmp.path() / "log";
  const int code = test_support::run_to_exit(spec);
  const std::string output = test_support::read_file(tmp.path() / "log");
  EXPECT_NE(code, 0) << output;
  EXPECT_NE(code, -1) << "did not exit by itself: " << output;
  EXPECT_NE(output.find(foreign.string()), std::string::npos)
      << "the error should name the directory: " << output;
  EXPECT_TRUE(fs::exists(foreign / "notes.txt")) << "the foreign directory was modified";
}

}  // namespace
}  // namespace hotkey::deploy_test
