// The rendered forms of the settings tables (config.h, cluster_config.h) and of the command-line
// flags (command_line.h): --help-config and the generated tables of docs/CONFIGURATION.md.
#include "config_docs.h"

#include <cstdio>
#include <string>
#include <string_view>

#include "cluster_config.h"
#include "command_line.h"
#include "config.h"

namespace hotkey::coordinator {
namespace {

constexpr const char* kKafkaSetRow =
    "| `--kafka-set NAME=VALUE` | | any other name | — | passed to librdkafka, to the handles "
    "it applies to (a consumer setting such as `session.timeout.ms` to the consumers, a producer "
    "setting such as `linger.ms` to the producer; e.g. `security.protocol`, `sasl.*`, "
    "`max.poll.interval.ms`); repeatable. The settings the coordinator owns are refused (exit "
    "2): `group.id` (use `group`), `acks`, `request.required.acks`, `enable.idempotence`, "
    "`transactional.id`, `enable.auto.commit`, `enable.auto.offset.store`, "
    "`auto.offset.reset`, `partition.assignment.strategy`, `enable.partition.eof` |\n";

std::string cluster_docs_markdown() {
  std::string out =
      "| flag | env | `kafka` setting | default | meaning |\n"
      "|---|---|---|---|---|\n";
  auto code = [](const char* v) {
    return v == nullptr ? std::string() : "`" + std::string(v) + "`";
  };
  for (const ClusterSettingInfo& s : cluster_settings()) {
    if (s.flag == nullptr) continue;
    out += "| " + code((std::string(s.flag) + " " + s.metavar).c_str()) + " | " + code(s.env) +
           " | " + code(s.name) + (s.alias ? " (or " + code(s.alias) + ")" : "") + " | " +
           s.default_value + " | " + s.doc + " |\n";
  }
  out += kKafkaSetRow;
  for (const ClusterSettingInfo& s : cluster_settings()) {
    if (s.flag != nullptr) continue;
    out += "| | | " + code(s.name) + " | " + s.default_value + " | " + s.doc +
           (s.get ? " (" + s.range() + ")" : "") + " |\n";
  }
  return out;
}

}  // namespace

std::string config_help_text() {
  std::string out =
      "Config file settings (--config FILE, a JSON object; docs/CONFIGURATION.md explains each).\n"
      "Detection settings go under \"defaults\" (every topic) or \"topics\": {\"<topic>\": "
      "{...}}.\n";
  const char* section = "";
  for (const SettingInfo& s : config_settings()) {
    if (std::string_view(section) != s.section) {
      section = s.section;
      std::string_view sv(section);
      out += sv == "service"  ? "\nService (top level):\n"
             : sv == "window" ? "\nAggregation window (top level):\n"
                              : "\nDetection and planning (under defaults or topics.<topic>):\n";
    }
    char line[256];
    std::snprintf(line, sizeof(line), "  %-28s default %-20s %s\n", s.name, s.default_value.c_str(),
                  s.range().c_str());
    out += line;
  }
  return out;
}

namespace {

std::string settings_table(std::string_view section) {
  std::string out =
      "| setting | default | range | meaning |\n"
      "|---|---|---|---|\n";
  for (const SettingInfo& s : config_settings()) {
    if (section != s.section) continue;
    const std::string shown =
        s.default_value == "—" ? s.default_value : "`" + s.default_value + "`";
    out +=
        "| `" + std::string(s.name) + "` | " + shown + " | " + s.range() + " | " + s.doc + " |\n";
  }
  return out;
}

}  // namespace

std::string config_docs_markdown() {
  std::string flags =
      "<!-- BEGIN GENERATED: flags (hotkey-coordinator --print-config-docs) -->\n"
      "| flag | env | meaning |\n"
      "|---|---|---|\n";
  for (const FlagInfo& f : command_line_flags()) {
    const std::string env = f.env != nullptr ? " `" + std::string(f.env) + "` " : " ";
    flags += "| `" + std::string(f.flag) + (f.doc_metavar ? std::string(" ") + f.doc_metavar : "") +
             "` |" + env + "| " + f.doc + " |\n";
  }
  flags += "<!-- END GENERATED: flags -->\n";
  return flags +
         "<!-- BEGIN GENERATED: settings (hotkey-coordinator --print-config-docs) -->\n"
         "### Service\n"
         "\n" +
         settings_table("service") +
         "\n"
         "### Aggregation window\n"
         "\n" +
         settings_table("window") +
         "\n"
         "### Detection and planning (`defaults`, and per topic under `topics`)\n"
         "\n"
         "Every setting below can be set under `defaults` (all topics) and overridden per topic "
         "under\n"
         "`topics.<name>`; a topic section starts from `defaults` whatever order the file uses.\n"
         "\n" +
         settings_table("topic") +
         "<!-- END GENERATED: settings -->\n"
         "<!-- BEGIN GENERATED: cluster (hotkey-coordinator --print-config-docs) -->\n" +
         cluster_docs_markdown() + "<!-- END GENERATED: cluster -->\n";
}

}  // namespace hotkey::coordinator
