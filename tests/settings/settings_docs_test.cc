// The settings tables (coordinator config.cc / cluster_config.cc, client config.cc) drive the
// parsers, the range checks and --help-config; these tests hold the docs to them. The setting
// tables of docs/CONFIGURATION.md and the property table of docs/CLIENT.md sit between
// "<!-- BEGIN GENERATED: NAME ... -->" and "<!-- END GENERATED: NAME -->" markers and must be
// exactly what the tables generate. HOTKEY_UPDATE_DOCS=1 rewrites the blocks in place instead.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "config.h"
#include "config_docs.h"
#include "hotkey/client/config.h"

namespace {

using nlohmann::json;
namespace coord = hotkey::coordinator;
namespace client = hotkey::client;

std::string doc_path(const char* name) { return std::string(HOTKEY_SOURCE_DIR) + "/docs/" + name; }

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path << " not found";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The block "<!-- BEGIN GENERATED: name ...-->\n ... <!-- END GENERATED: name -->\n" of `text`
// as [begin, end) offsets; npos when absent.
std::pair<size_t, size_t> block(const std::string& text, const std::string& name) {
  const size_t b = text.find("<!-- BEGIN GENERATED: " + name + " ");
  const std::string end_marker = "<!-- END GENERATED: " + name + " -->\n";
  const size_t e = text.find(end_marker);
  if (b == std::string::npos || e == std::string::npos || e < b) return {std::string::npos, 0};
  return {b, e + end_marker.size()};
}

// Checks that docs/`page` holds `generated`'s block `name`; with HOTKEY_UPDATE_DOCS set,
// writes it there instead.
void expect_block(const char* page, const std::string& generated, const std::string& name) {
  const auto [gb, ge] = block(generated, name);
  ASSERT_NE(gb, std::string::npos) << "the generator has no block '" << name << "'";
  const std::string want = generated.substr(gb, ge - gb);
  const std::string path = doc_path(page);
  std::string text = read(path);
  const auto [db, de] = block(text, name);
  ASSERT_NE(db, std::string::npos) << page << " has no GENERATED block '" << name
                                   << "'; add its markers where the table belongs:\n"
                                   << want;
  const std::string have = text.substr(db, de - db);
  if (have == want) return;
  if (const char* update = std::getenv("HOTKEY_UPDATE_DOCS"); update && *update) {
    text.replace(db, de - db, want);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return;
  }
  // The first differing line makes the failure readable.
  std::istringstream h(have), w(want);
  std::string hl, wl;
  int line = 0;
  while (true) {
    const bool hm = static_cast<bool>(std::getline(h, hl));
    const bool wm = static_cast<bool>(std::getline(w, wl));
    ++line;
    if (!hm && !wm) break;
    if (!hm || !wm || hl != wl) {
      ADD_FAILURE() << page << " block '" << name
                    << "' differs from the settings table at its line " << line
                    << ":\n  page:  " << (hm ? hl : "<end>") << "\n  table: " << (wm ? wl : "<end>")
                    << "\nChange the table in the code (not the page), then regenerate the page: "
                       "HOTKEY_UPDATE_DOCS=1 build/bin/settings_docs_tests";
      break;
    }
  }
}

TEST(SettingsDocs, ConfigurationMdHoldsTheGeneratedSettingTables) {
  const std::string generated = coord::config_docs_markdown();
  expect_block("CONFIGURATION.md", generated, "flags");
  expect_block("CONFIGURATION.md", generated, "settings");
  expect_block("CONFIGURATION.md", generated, "cluster");
}

TEST(SettingsDocs, ClientMdHoldsTheGeneratedPropertyTable) {
  const std::string generated =
      "<!-- BEGIN GENERATED: properties (client_properties_markdown()) -->\n" +
      client::client_properties_markdown() + "<!-- END GENERATED: properties -->\n";
  expect_block("CLIENT.md", generated, "properties");
}

// Every row of a CONFIGURATION.md setting table names a setting the parser knows, and every
// setting of the table is on the page with its default.
TEST(SettingsDocs, ConfigurationMdDocumentsExactlyTheParsedSettings) {
  const std::string text = read(doc_path("CONFIGURATION.md"));
  std::set<std::string> documented;
  const std::regex row(R"(\n\| `([a-z_]+)` \| ([^|]*) \|)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), row); it != std::sregex_iterator();
       ++it) {
    documented.insert((*it)[1]);
  }
  std::set<std::string> known;
  for (const coord::SettingInfo& s : coord::config_settings()) {
    known.insert(s.name);
    EXPECT_TRUE(documented.contains(s.name)) << s.name << " is not documented";
    EXPECT_NE(
        text.find("| `" + std::string(s.name) + "` | " +
                  (s.default_value == "—" ? s.default_value : "`" + s.default_value + "`") + " |"),
        std::string::npos)
        << s.name << " is not documented with its default " << s.default_value;
  }
  for (const std::string& name : documented) {
    EXPECT_TRUE(known.contains(name))
        << "CONFIGURATION.md documents '" << name << "', which the coordinator does not read";
  }
  for (const coord::ClusterSettingInfo& s : coord::cluster_settings()) {
    EXPECT_NE(text.find("`" + std::string(s.name) + "`"), std::string::npos) << s.name;
  }
}

// The documented default of every numeric coordinator setting is what the struct holds, and the
// parser takes it back (the table is the parser).
TEST(SettingsDocs, CoordinatorDefaultsRoundTripThroughTheParser) {
  int checked = 0;
  for (const coord::SettingInfo& s : coord::config_settings()) {
    if (s.form != nullptr) continue;
    const json value = json::parse(s.default_value);
    json doc = std::string_view(s.section) == "topic" ? json{{"defaults", {{s.name, value}}}}
                                                      : json{{s.name, value}};
    coord::CoordinatorConfig c;
    ASSERT_NO_THROW(coord::apply_config_json(c, doc.dump())) << s.name;
    ASSERT_NO_THROW(c.validate()) << s.name;
    const double got = s.get != nullptr ? s.get(c) : s.get_topic(c.defaults);
    const double built_in =
        s.get != nullptr ? s.get(coord::CoordinatorConfig{}) : s.get_topic(coord::TopicSettings{});
    EXPECT_EQ(got, built_in) << s.name;
    EXPECT_EQ(got, value.get<double>()) << s.name;
    ++checked;
  }
  EXPECT_GT(checked, 35);
  // The cluster integers the same way (the table's setter and validate()).
  for (const coord::ClusterSettingInfo& s : coord::cluster_settings()) {
    if (s.get == nullptr) continue;
    std::string shown = s.default_value.substr(1, s.default_value.size() - 2);  // `30000`
    coord::ClusterConfig c;
    c.bootstrap = "k:9092";
    coord::apply_cluster_setting(c, std::string(s.name) + "=" + shown);
    EXPECT_NO_THROW(c.validate()) << s.name;
    EXPECT_EQ(s.get(c), s.get(coord::ClusterConfig{})) << s.name;
    EXPECT_EQ(std::to_string(s.get(c)), shown) << s.name;
    // Just outside the range: refused, naming the setting and its range.
    coord::apply_cluster_setting(c, std::string(s.name) + "=" + std::to_string(s.lo - 1));
    try {
      c.validate();
      ADD_FAILURE() << s.name << " below its range was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(
          std::string(e.what()).find("kafka." + std::string(s.name) + " must be " + s.range()),
          std::string::npos)
          << e.what();
    }
  }
}

// Every documented client default that is a value is accepted by the parser and is what the
// parser's defaults are.
TEST(SettingsDocs, ClientDefaultsAreAcceptedValues) {
  const client::ClientConfig defaults = client::parse_client_config({});
  int checked = 0;
  for (const client::PropertyInfo& p : client::client_properties()) {
    std::string v = p.default_value;
    if (v.size() >= 2 && v.front() == '`' && v.back() == '`') v = v.substr(1, v.size() - 2);
    if (v.empty() || v == "empty" || v.find(' ') != std::string::npos || v.front() == '<') {
      continue;  // no literal default ("empty", "from `partitioner`, else ...", "<hostname>-<pid>")
    }
    client::ClientConfig c;
    ASSERT_NO_THROW(c = client::parse_client_config({{p.name, v}})) << p.name << "=" << v;
    EXPECT_EQ(c.report_interval_ms, defaults.report_interval_ms) << p.name;
    EXPECT_EQ(c.sample_rate, defaults.sample_rate) << p.name;
    EXPECT_EQ(c.sketch_capacity, defaults.sketch_capacity) << p.name;
    EXPECT_EQ(c.routing_mode, defaults.routing_mode) << p.name;
    EXPECT_EQ(c.salt_policy, defaults.salt_policy) << p.name;
    EXPECT_EQ(c.list_ttl_ms, defaults.list_ttl_ms) << p.name;
    EXPECT_EQ(c.expired_policy, defaults.expired_policy) << p.name;
    EXPECT_EQ(c.poll_wait_ms, defaults.poll_wait_ms) << p.name;
    EXPECT_EQ(c.http_timeout_ms, defaults.http_timeout_ms) << p.name;
    EXPECT_EQ(c.backoff_initial_ms, defaults.backoff_initial_ms) << p.name;
    EXPECT_EQ(c.backoff_max_ms, defaults.backoff_max_ms) << p.name;
    EXPECT_EQ(c.salt_headers, defaults.salt_headers) << p.name;
    EXPECT_EQ(c.surge_interval_ms, defaults.surge_interval_ms) << p.name;
    EXPECT_EQ(c.list_stale_ms, defaults.list_stale_ms) << p.name;
    EXPECT_EQ(c.surge_factor, defaults.surge_factor) << p.name;
    EXPECT_EQ(c.report_queue_max, defaults.report_queue_max) << p.name;
    EXPECT_EQ(c.report_json, defaults.report_json) << p.name;
    EXPECT_EQ(c.transport, defaults.transport) << p.name;
    EXPECT_EQ(c.reports_topic, defaults.reports_topic) << p.name;
    EXPECT_EQ(c.lists_topic, defaults.lists_topic) << p.name;
    ++checked;
  }
  EXPECT_GE(checked, 18);
}

// Every hotkey.* property in a CLIENT.md table is one the client parses (the property table),
// except the plugin's own hotkey.startup.wait.ms and hotkey.stats.file.
TEST(SettingsDocs, ClientMdDocumentsOnlyParsedProperties) {
  const std::string text = read(doc_path("CLIENT.md"));
  std::set<std::string> known;
  for (const client::PropertyInfo& p : client::client_properties()) known.insert(p.name);
  const std::regex row(R"(\n\| `(hotkey\.[^`]+)` \|)");
  int rows = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), row); it != std::sregex_iterator();
       ++it, ++rows) {
    const std::string name = (*it)[1];
    if (name == "hotkey.startup.wait.ms" || name == "hotkey.stats.file") continue;  // the plugin's
    EXPECT_TRUE(known.contains(name))
        << "CLIENT.md documents '" << name << "', which parse_client_config does not read";
  }
  EXPECT_GT(rows, 25);
  for (const std::string& name : known) {
    if (name.find('<') != std::string::npos) continue;
    EXPECT_NO_THROW({
      try {
        client::parse_client_config({{name, "?"}});
      } catch (const std::invalid_argument& e) {
        // A bad value is refused naming the property, never as an unknown one.
        if (std::string(e.what()).starts_with("unknown property")) throw;
      }
    }) << name;
  }
}

}  // namespace
