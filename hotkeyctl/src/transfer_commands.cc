// Remote commands that move operator state between coordinators: export and import.
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hotkey/api_model.h"
#include "import_document.h"
#include "remote_client.h"
#include "table.h"

namespace hotkeyctl {
namespace {

namespace api = hotkey::api;
using nlohmann::json;

// A topic's policies; none from a coordinator that predates them (404: no such endpoint).
std::vector<api::Policy> policies_of(Remote& remote, const std::string& topic) {
  try {
    return remote.call("GET", topic_path(topic) + "/policies").as<api::PoliciesAnswer>().policies;
  } catch (const CallFailure& f) {
    if (f.code != kExitNotFound) throw;
    return {};
  }
}

// Pins, denies and policies of every topic (or --topic T) as one JSON document.
int cmd_export(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 0, "export [--topic T] [--out FILE]");
  const auto only = flags.value("topic");
  std::vector<std::string> topics;
  if (only) {
    topics.push_back(*only);
  } else {
    for (const api::TopicSummary& tp :
         remote.call("GET", "/v1/topics").as<api::TopicsAnswer>().topics) {
      topics.push_back(tp.topic);
    }
  }
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  json doc{{"format", kExportFormat}, {"exported_at_ms", now_ms}, {"source", remote.url()}};
  json out_topics = json::array();
  size_t n_pins = 0, n_denies = 0, n_policies = 0;
  for (const std::string& topic : topics) {
    const auto summary = remote.call("GET", topic_path(topic)).as<api::TopicDetail>();
    json tp{{"topic", topic},
            {"pins", json::array()},
            {"denies", json::array()},
            {"policies", json::array()}};
    for (const api::Pin& p : summary.pinned) {
      json e{{"reason", p.reason}};
      api::put_key(e, p.key);
      if (p.salts > 0) e["salts"] = p.salts;
      if (p.expires_at_ms > 0) {
        // The absolute deadline, so a pin re-imported later ends when it would have (or is
        // skipped once it has); ttl_s, the time left now, is for older importers.
        const double left_s = std::ceil(static_cast<double>(p.expires_at_ms - now_ms) / 1000.0);
        if (left_s <= 0) continue;
        e["expires_at_ms"] = p.expires_at_ms;
        e["ttl_s"] = static_cast<int64_t>(left_s);
      }
      e["by"] = p.by;
      tp["pins"].push_back(std::move(e));
      ++n_pins;
    }
    for (const api::Deny& d : summary.denied) {
      json e{{"reason", d.reason}};
      api::put_key(e, d.key);
      e["by"] = d.by;
      tp["denies"].push_back(std::move(e));
      ++n_denies;
    }
    for (const api::Policy& p : policies_of(remote, topic)) {
      json e{{"reason", p.reason}};
      api::put_key(e, p.prefix);
      if (p.never_salt) e["never_salt"] = true;
      if (p.hot_fraction > 0) e["hot_fraction"] = p.hot_fraction;
      if (p.max_salts > 0) e["max_salts"] = p.max_salts;
      e["by"] = p.by;
      tp["policies"].push_back(std::move(e));
      ++n_policies;
    }
    if (!tp["pins"].empty() || !tp["denies"].empty() || !tp["policies"].empty() || only) {
      out_topics.push_back(std::move(tp));
    }
  }
  doc["topics"] = std::move(out_topics);
  const std::string text = doc.dump(2, ' ', false, json::error_handler_t::strict) + "\n";
  const auto file = flags.value("out");
  if (file && *file != "-") {
    std::ofstream f(*file, std::ios::binary | std::ios::trunc);
    if (!(f << text) || !f.flush()) throw CallFailure{kExitFailure, "cannot write '" + *file + "'"};
    if (!flags.has("json")) {
      out << "exported " << n_pins << " pins and " << n_denies << " denies";
      if (n_policies > 0) out << ", " << n_policies << " policies";
      out << " to " << *file << '\n';
    }
  } else {
    out << text;
  }
  return kExitOk;
}

// A number field of an import operation's body (0 when absent).
double body_number(const json& body, const char* name) {
  auto it = body.find(name);
  return it != body.end() && it->is_number() ? it->get<double>() : 0.0;
}

// Whether `summary` (GET /v1/topics/{t}, nullopt for an unknown topic) already holds what `op`
// would set: a deny with the same reason, or a pin with the same salts and reason ending
// within 2 s of the imported deadline (the pin call takes whole seconds).
bool already_in_place(const std::optional<api::TopicDetail>& summary,
                      const std::vector<api::Policy>& policies, const ImportOp& op) {
  if (!summary) return false;
  const auto reason_it = op.body.find("reason");
  const std::string reason =
      reason_it != op.body.end() && reason_it->is_string() ? reason_it->get<std::string>() : "";
  if (op.what == "policy") {
    for (const api::Policy& p : policies) {
      if (p.prefix == op.key && p.reason == reason &&
          p.never_salt == op.body.contains("never_salt") &&
          p.hot_fraction == body_number(op.body, "hot_fraction") &&
          static_cast<double>(p.max_salts) == body_number(op.body, "max_salts")) {
        return true;
      }
    }
    return false;
  }
  if (op.what == "deny") {
    for (const api::Deny& d : summary->denied) {
      if (d.key == op.key && d.reason == reason) return true;
    }
    return false;
  }
  for (const api::Pin& p : summary->pinned) {
    if (p.key != op.key || p.reason != reason) continue;
    if (static_cast<double>(p.salts) != body_number(op.body, "salts")) return false;
    if (op.expires_at_ms == 0 || p.expires_at_ms == 0) {
      return op.expires_at_ms == 0 && p.expires_at_ms == 0;
    }
    return std::abs(p.expires_at_ms - op.expires_at_ms) <= 2000;
  }
  return false;
}

int cmd_import(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 1, "import FILE|- [--dry-run]");
  const std::string& source = flags.positional()[0];
  std::string text;
  if (source == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), {});
  } else {
    std::ifstream f(source, std::ios::binary);
    if (!f) throw UsageError("cannot read '" + source + "'");
    text.assign(std::istreambuf_iterator<char>(f), {});
  }
  // Check the whole document before sending anything: no half-applied imports from typos.
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  const std::vector<ImportOp> ops = parse_import_document(text, source, now_ms);
  const bool dry = flags.has("dry-run");
  // What the target holds now, per topic (null: topic unknown there). A pin or deny already
  // in place is skipped, so re-importing a file adds no audit entries.
  std::map<std::string, std::optional<api::TopicDetail>> held;
  std::map<std::string, std::vector<api::Policy>> held_policies;
  size_t done = 0, skipped = 0;
  for (const ImportOp& op : ops) {
    std::string skip;
    if (op.expired) {
      skip = "its ttl ended at " + utc_time(op.expires_at_ms);
    } else {
      if (!held.count(op.topic)) {
        try {
          held[op.topic] = remote.call("GET", topic_path(op.topic)).as<api::TopicDetail>();
        } catch (const CallFailure& f) {
          if (f.code != kExitNotFound) throw;
          held[op.topic] = std::nullopt;
        }
        if (held[op.topic]) held_policies[op.topic] = policies_of(remote, op.topic);
      }
      if (already_in_place(held[op.topic], held_policies[op.topic], op)) {
        skip = "already in place";
      }
    }
    if (!skip.empty()) {
      ++skipped;
      if (!flags.has("json")) {
        out << "skipped " << op.what << ' ' << op.label << " on " << op.topic << ": " << skip
            << '\n';
      }
      continue;
    }
    if (dry) {
      if (!flags.has("json"))
        out << "would " << op.what << ' ' << op.label << " on " << op.topic << '\n';
      continue;
    }
    try {
      const std::string path = topic_path(op.topic) + (op.what == "pin"    ? "/pins"
                                                       : op.what == "deny" ? "/denies"
                                                                           : "/policies");
      remote.call("POST", path, &op.body, true);
    } catch (CallFailure& f) {
      f.message = std::to_string(done) + " of " + std::to_string(ops.size()) +
                  " changes applied; stopped at " + op.what + " " + op.label + " on " + op.topic +
                  ": " + f.message;
      throw;
    }
    ++done;
    if (!flags.has("json")) {
      out << (op.what == "pin"    ? "pinned "
              : op.what == "deny" ? "denied "
                                  : "set the policy of prefix ")
          << op.label << " on " << op.topic << '\n';
    }
  }
  const std::string skipped_text =
      skipped ? ", " + std::to_string(skipped) + " skipped (already in place or expired)" : "";
  if (flags.has("json")) {
    print_json(out, json{{"applied", done},
                         {"planned", ops.size() - skipped},
                         {"skipped", skipped},
                         {"dry_run", dry}});
  } else if (dry) {
    out << "dry run: " << ops.size() - skipped << " changes would be applied" << skipped_text
        << '\n';
  } else {
    out << done << " changes applied" << skipped_text << '\n';
  }
  return kExitOk;
}

int run_export(std::span<const std::string> args, Io io) {
  return remote_main("export", args, io, {{"topic", true}, {"out", true}}, cmd_export);
}
int run_import(std::span<const std::string> args, Io io) {
  return remote_main("import", args, io, {{"dry-run", false}}, cmd_import);
}

}  // namespace

const Command kExportCommand = {
    "export", "pins, denies and policies as JSON (to move them between environments)",
    "usage: hotkeyctl export [--topic T] [--out FILE]\n"
    "\n"
    "Writes {\"format\": \"hotkey-operator-state/1\", \"topics\": [{topic, pins: [{key|key_b64,\n"
    "reason, salts?, ttl_s?}], denies: [{key|key_b64, reason}], policies: [{key|key_b64\n"
    "(the prefix), never_salt?, hot_fraction?, max_salts?, reason}]}]}. A pin's ttl_s is the\n"
    "time it has left. 'hotkeyctl import' applies such a file.\n"
    "\n"
    "  --topic T      only this topic (default: every topic)\n"
    "  --out FILE     write to FILE instead of standard output\n" HOTKEY_REMOTE_FLAGS,
    &run_export};

const Command kImportCommand = {
    "import", "apply an export's pins, denies and policies (operator)",
    "usage: hotkeyctl import FILE|- [--dry-run]\n"
    "\n"
    "Checks the whole file first, then applies denies, policies, then pins, topic by topic;\n"
    "stops at the first refusal and says how many changes were applied.\n"
    "\n"
    "  --dry-run      print what would change, change nothing\n" HOTKEY_REMOTE_FLAGS,
    &run_import};

}  // namespace hotkeyctl
