// Config file, per-topic overrides, flags and environment precedence, and refusals.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "config.h"
#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

TEST(CoordinatorConfig, TopicOverridesStartFromDefaultsWhateverTheOrder) {
  CoordinatorConfig c;
  apply_config_json(c, R"({"topics": {"payments": {"max_hot_keys": 8, "hash": "crc32",
                                                    "separator": "~"}},
                           "defaults": {"min_rate": 50, "hold_ms": 60000},
                           "max_waiters": 2048, "listen": "0.0.0.0:9000"})");
  EXPECT_EQ(c.max_waiters, 2048u);
  EXPECT_EQ(c.listen_host, "0.0.0.0");
  EXPECT_EQ(c.listen_port, 9000);
  EXPECT_EQ(c.settings_for("other").min_rate, 50);
  const TopicSettings& p = c.settings_for("payments");
  EXPECT_EQ(p.max_hot_keys, 8u);
  EXPECT_EQ(p.min_rate, 50);  // inherited
  EXPECT_EQ(p.hold_ms, 60000);
  EXPECT_EQ(p.hash, HashFamily::kCrc32);
  EXPECT_EQ(p.separator, "~");
}

TEST(CoordinatorConfig, RefusesUnknownAndOutOfRangeSettings) {
  for (const char* bad :
       {R"({"max_waiterz": 1})", R"({"defaults": {"hot_fraction": -1}})",
        R"({"defaults": {"cold_fraction": 0.9, "hot_fraction": 0.5}})",
        R"({"topics": {"bad topic": {}}})", R"({"http_threads": "8"})",
        R"({"topics": {"t": {"hash": "sha1"}}})", R"({"topics": {"t": {"separator": "1"}}})",
        R"({"listen": "nohost"})", R"([1])", R"({"epoch_ms": 1)"}) {
    CoordinatorConfig c;
    EXPECT_THROW(
        {
          apply_config_json(c, bad);
          c.validate();
        },
        std::invalid_argument)
        << bad;
  }
}

TEST(CoordinatorConfig, FlagsWinOverFileAndEnvironmentAddsTokens) {
  TempDir dir;
  const auto file = dir.path() / "c.json";
  std::ofstream(file) << R"({"listen": "127.0.0.1:1111", "data_dir": "/from/file",
                            "operator_tokens": {"bob": "bob-token-123"}})";
  setenv("HOTKEY_OPERATOR_TOKEN", "env=env-token-123", 1);
  setenv("HOTKEY_PRODUCER_TOKEN", "producer-env-token", 1);
  const std::string cfg = file.string();
  const char* argv[] = {"hotkey-coordinator", "--config",
                        cfg.c_str(),          "--listen",
                        "127.0.0.1:2222",     "--operator-token=cli=cli-token-123"};
  auto c = parse_command_line(6, argv);
  unsetenv("HOTKEY_OPERATOR_TOKEN");
  unsetenv("HOTKEY_PRODUCER_TOKEN");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->listen_port, 2222);
  EXPECT_EQ(c->data_dir, "/from/file");
  EXPECT_EQ(c->operator_tokens.size(), 3u);
  EXPECT_EQ(c->operator_tokens.find("env")->second, "env-token-123");
  EXPECT_EQ(c->operator_tokens.find("cli")->second, "cli-token-123");
  EXPECT_EQ(c->producer_token, "producer-env-token");

  const char* help[] = {"hotkey-coordinator", "--help"};
  EXPECT_FALSE(parse_command_line(2, help).has_value());
  const char* missing[] = {"hotkey-coordinator", "--listen", "127.0.0.1:1"};
  EXPECT_THROW(parse_command_line(3, missing), std::invalid_argument);
  const char* unknown[] = {"hotkey-coordinator", "--data", "/x", "--bogus"};
  EXPECT_THROW(parse_command_line(4, unknown), std::invalid_argument);
  const char* short_token[] = {"hotkey-coordinator", "--data", "/x", "--operator-token", "abc"};
  EXPECT_THROW(parse_command_line(5, short_token), std::invalid_argument);
}

TEST(CoordinatorConfig, PerTopicSettingsDriveDetection) {
  CoordinatorConfig cfg = test_config();
  apply_config_json(cfg, R"({"topics": {"strict": {"max_hot_keys": 1, "balance_target": 100}},
                             "defaults": {"balance_target": 100, "min_rate": 1}})");
  Harness h(cfg);
  std::map<std::string, uint64_t> counts{{"a", 400}, {"b", 300}, {"c", 300}};
  ASSERT_TRUE(h.coord().ingest(make_report("p", "strict", 8, 1, counts)).ok());
  ASSERT_TRUE(h.coord().ingest(make_report("p", "loose", 8, 1, counts)).ok());
  h.clock().advance_ms(1000);
  h.coord().tick();
  EXPECT_EQ(h.list("strict").keys.size(), 1u);
  EXPECT_EQ(h.list("strict").keys[0].key, "a");
  EXPECT_EQ(h.list("loose").keys.size(), 3u);
}

}  // namespace
}  // namespace hotkey::coordinator::test
