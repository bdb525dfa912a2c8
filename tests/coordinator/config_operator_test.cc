// Issue 18, operator items 1 and 4: every configured operator token works (rotation), config
// ranges are enforced and named, misplaced settings get a hint, --help-config and
// docs/CONFIGURATION.md list the same settings and ranges.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "config.h"
#include "config_docs.h"
#include "test_util.h"

namespace hotkey::coordinator::test {
namespace {

using nlohmann::json;

std::optional<CoordinatorConfig> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "hotkey-coordinator");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

std::multiset<std::string> tokens_of(const CoordinatorConfig& c, const std::string& name) {
  std::multiset<std::string> out;
  auto [a, b] = c.operator_tokens.equal_range(name);
  for (auto it = a; it != b; ++it) out.insert(it->second);
  return out;
}

TEST(OperatorTokens, TwoTokensOfOneNameBothWork) {
  TempDir dir;
  const auto file = dir.path() / "operators";
  std::ofstream(file) << "alice=alice-old-token\nalice=alice-new-token\n";
  ::chmod(file.c_str(), 0600);
  const std::string data = (dir.path() / "d").string();

  auto c = parse({"--data", data, "--operator-token-file", file.string()});
  ASSERT_TRUE(c);
  EXPECT_EQ(tokens_of(*c, "alice"),
            (std::multiset<std::string>{"alice-old-token", "alice-new-token"}));

  // Two bare flags: both named "operator", both kept.
  c = parse({"--data", data, "--operator-token", "first-bare-token", "--operator-token",
             "second-bare-token"});
  ASSERT_TRUE(c);
  EXPECT_EQ(tokens_of(*c, "operator"),
            (std::multiset<std::string>{"first-bare-token", "second-bare-token"}));

  // The environment's bare token plus a bare flag: both kept (the env var "adds one more").
  setenv("HOTKEY_OPERATOR_TOKEN", "env-bare-token", 1);
  c = parse({"--data", data, "--operator-token", "flag-bare-token"});
  unsetenv("HOTKEY_OPERATOR_TOKEN");
  ASSERT_TRUE(c);
  EXPECT_EQ(tokens_of(*c, "operator"),
            (std::multiset<std::string>{"env-bare-token", "flag-bare-token"}));

  // The same token twice is one entry.
  c = parse({"--data", data, "--operator-token", "bob=bob-token-1", "--operator-token",
             "bob=bob-token-1"});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->operator_tokens.size(), 1u);
}

TEST(OperatorTokens, RotationOverHttpBothTokensActAndAuditTheName) {
  CoordinatorConfig cfg = test_config();
  cfg.operator_tokens.clear();
  TempDir dir;
  const auto file = dir.path() / "operators";
  std::ofstream(file) << "alice=alice-old-token\nalice=alice-new-token\n";
  ::chmod(file.c_str(), 0600);
  cfg.operator_tokens_file = file.string();
  load_token_files(cfg);
  Harness h(cfg, true);
  auto c = h.client();
  for (const char* tok : {"alice-old-token", "alice-new-token"}) {
    auto r = c->Post("/v1/topics/t/pins", {{"Authorization", std::string("Bearer ") + tok}},
                     json{{"key", std::string("k-") + tok}, {"reason", "rotation"}}.dump(),
                     "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << tok << ": " << r->body;
  }
  auto r = c->Get("/v1/audit?limit=10", {{"Authorization", "Bearer alice-new-token"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  auto doc = json::parse(r->body);
  const json& entries = doc.is_array() ? doc : doc["entries"];
  ASSERT_EQ(entries.size(), 2u) << r->body;
  for (const auto& e : entries) EXPECT_EQ(e["who"], "alice") << e.dump();
}

// Applies `doc` to a fresh config and validates it; returns the error or "".
std::string refusal(const json& doc) {
  CoordinatorConfig c;
  try {
    apply_config_json(c, doc.dump());
    c.validate();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// An integral value as a JSON integer (integer settings refuse 2.0).
json num(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v)) && std::abs(v) < 9e15) {
    return static_cast<int64_t>(v);
  }
  return v;
}

json at_level(const SettingInfo& s, const json& value) {
  if (std::string_view(s.section) == "topic") return json{{"defaults", {{s.name, value}}}};
  return json{{s.name, value}};
}

// Companion values so that a setting's own bound does not trip a cross-setting rule.
json with_companions(const SettingInfo& s, json doc) {
  json& where = std::string_view(s.section) == "topic" ? doc["defaults"] : doc;
  const std::string name = s.name;
  if (name == "cold_fraction") where["hot_fraction"] = 1000;
  if (name == "hot_fraction") where["cold_fraction"] = 0.0001;
  if (name == "min_salts") where["max_salts"] = 100000;
  if (name == "max_salts") where["min_salts"] = 1;
  return doc;
}

TEST(ConfigRanges, EveryNumericSettingEnforcesTheRangeItNames) {
  int checked = 0;
  for (const SettingInfo& s : config_settings()) {
    if (s.form != nullptr) continue;
    ++checked;
    const std::string range = s.range();
    // Below the range (or at an open lower bound) and above it: refused naming setting + range.
    std::vector<json> bad;
    if (s.lo_open) {
      bad.push_back(num(s.lo));
    } else if (s.lo >= 1 || s.lo <= -1) {
      bad.push_back(static_cast<int64_t>(s.lo) - 1);
    } else {
      bad.push_back(-1);
    }
    bad.push_back(s.hi >= 1e12 ? json(s.hi * 10) : num(s.hi + 1));
    for (const json& v : bad) {
      const std::string err = refusal(with_companions(s, at_level(s, v)));
      EXPECT_NE(err.find(s.name), std::string::npos) << s.name << "=" << v << ": " << err;
      EXPECT_NE(err.find(range), std::string::npos) << s.name << "=" << v << ": " << err;
    }
    // The bounds themselves are accepted.
    const json lo = s.lo_open ? json(s.lo + 0.001) : num(s.lo);
    for (const json& v : {lo, num(s.hi)}) {
      EXPECT_EQ(refusal(with_companions(s, at_level(s, v))), "") << s.name << "=" << v;
    }
  }
  EXPECT_GT(checked, 35);
  // The two that broke the service before (issue 18).
  EXPECT_NE(refusal({{"max_waiters", 0}}).find("max_waiters must be 1..100000, got 0"),
            std::string::npos);
  EXPECT_NE(refusal({{"audit_max_limit", 0}}).find("audit_max_limit must be 1..100000, got 0"),
            std::string::npos);
}

TEST(ConfigRanges, MisplacedAndMistypedSettingsGetAHint) {
  EXPECT_NE(refusal({{"max_salts", 8}}).find("did you mean 'defaults.max_salts'"),
            std::string::npos)
      << refusal({{"max_salts", 8}});
  EXPECT_NE(refusal({{"defaults", {{"max_waiters", 8}}}}).find("is a top-level setting"),
            std::string::npos);
  EXPECT_NE(refusal({{"topics", {{"t", {{"max_wait_ms", 8}}}}}}).find("is a top-level setting"),
            std::string::npos);
  EXPECT_NE(refusal({{"max_waiterz", 8}}).find("did you mean 'max_waiters'"), std::string::npos);
  EXPECT_NE(refusal({{"topics", {{"t", {{"hot_fractoin", 0.3}}}}}})
                .find("did you mean 'topics.t.hot_fraction'"),
            std::string::npos);
  EXPECT_NE(refusal({{"topics", {{"t", {{"salts", -3}}}}}}).find("unknown setting"),
            std::string::npos);
}

TEST(ConfigRanges, HelpListsEverySettingAndPointsToHelpConfig) {
  EXPECT_NE(usage_text().find("--help-config"), std::string::npos);
  const std::string help = config_help_text();
  for (const SettingInfo& s : config_settings()) {
    EXPECT_NE(help.find(std::string(s.name) + " "), std::string::npos) << s.name;
    EXPECT_NE(help.find(s.range()), std::string::npos) << s.name;
  }
  EXPECT_FALSE(parse({"--help-config"}).has_value());
}

// docs/CONFIGURATION.md's setting tables (| `name` | default | range | meaning |) and the
// coordinator's settings are the same set with the same defaults and ranges.
TEST(ConfigDocs, ConfigurationMdListsEverySettingWithItsDefaultAndRange) {
  std::ifstream in(std::string(HOTKEY_TEST_DATA_DIR) + "/../../docs/CONFIGURATION.md");
  ASSERT_TRUE(in) << "docs/CONFIGURATION.md not found";
  std::map<std::string, std::pair<std::string, std::string>> documented;
  std::string line;
  const std::regex row(R"(^\| `([a-z_]+)` \| ([^|]*) \| ([^|]*) \|)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, row)) {
      auto trim = [](std::string v) {
        while (!v.empty() && v.back() == ' ') v.pop_back();
        if (v.size() >= 2 && v.front() == '`' && v.back() == '`') v = v.substr(1, v.size() - 2);
        return v;
      };
      documented[m[1]] = {trim(m[2]), trim(m[3])};
    }
  }
  std::set<std::string> known;
  for (const SettingInfo& s : config_settings()) {
    known.insert(s.name);
    auto it = documented.find(s.name);
    if (it == documented.end()) {
      ADD_FAILURE() << "setting '" << s.name << "' is not in docs/CONFIGURATION.md";
      continue;
    }
    EXPECT_EQ(it->second.first, s.default_value) << s.name << " default";
    EXPECT_EQ(it->second.second, s.range()) << s.name << " range";
  }
  for (const auto& [name, _] : documented) {
    EXPECT_TRUE(known.contains(name))
        << "docs/CONFIGURATION.md documents '" << name << "', which the coordinator does not read";
  }
}

}  // namespace
}  // namespace hotkey::coordinator::test
