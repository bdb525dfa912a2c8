// Operator remote commands (they need the operator token): pin, unpin, deny, allow,
// policy add|list|remove, delete-topic and audit.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "hotkey/api_model.h"
#include "hotkey/key_codec.h"
#include "remote_client.h"
#include "table.h"

namespace hotkeyctl {
namespace {

namespace api = hotkey::api;
using hotkey::printable_key;
using nlohmann::json;

void print_change(const Flags& flags, const Reply& r, const std::string& what, std::ostream& out) {
  if (flags.has("json")) {
    print_json(out, r.doc);
    return;
  }
  out << what;
  if (const uint64_t version = r.as<api::OperatorResult>().version; version > 0) {
    out << " (list version " << version << ")";
  } else {
    // The coordinator keeps the decision; a list is published once producers report.
    out << " (no list yet: applies once the topic has reports)";
  }
  out << '\n';
}

int cmd_pin(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 2, "pin TOPIC KEY [--salts N] [--ttl DUR] --reason TEXT [--b64]");
  const std::string reason = reason_flag(flags, "pin");
  const std::string& topic = flags.positional()[0];
  const std::string key = key_of(flags, flags.positional()[1]);
  json body{{"reason", reason}};
  api::put_key(body, key);
  if (flags.has("salts")) body["salts"] = flags.integer("salts", 1, 100000);
  if (auto ttl = flags.value("ttl")) body["ttl_s"] = parse_duration_s(*ttl);
  Reply r = remote.call("POST", topic_path(topic) + "/pins", &body, true);
  print_change(flags, r, "pinned " + printable_key(key) + " on " + topic, out);
  return kExitOk;
}

int cmd_unpin_allow(const Flags& flags, Remote& remote, std::ostream& out, bool unpin) {
  need_positional(flags, 2, unpin ? "unpin TOPIC KEY [--b64]" : "allow TOPIC KEY [--b64]");
  const std::string& topic = flags.positional()[0];
  const std::string key = key_of(flags, flags.positional()[1]);
  Reply r =
      remote.call("DELETE", topic_path(topic) + (unpin ? "/pins?" : "/denies?") + key_query(key),
                  nullptr, true);
  print_change(flags, r, (unpin ? "unpinned " : "allowed ") + printable_key(key) + " on " + topic,
               out);
  return kExitOk;
}

int cmd_deny(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 2, "deny TOPIC KEY --reason TEXT [--b64]");
  const std::string reason = reason_flag(flags, "deny");
  const std::string& topic = flags.positional()[0];
  const std::string key = key_of(flags, flags.positional()[1]);
  json body{{"reason", reason}};
  api::put_key(body, key);
  Reply r = remote.call("POST", topic_path(topic) + "/denies", &body, true);
  print_change(flags, r, "denied " + printable_key(key) + " on " + topic + " (never salted)", out);
  return kExitOk;
}

constexpr const char* kPolicyUsage =
    "policy add TOPIC PREFIX (--never-salt | [--hot-fraction F] [--max-salts N]) --reason TEXT "
    "[--b64] | policy list TOPIC | policy remove TOPIC PREFIX [--b64]";

int cmd_policy_add(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 2, kPolicyUsage);
  const bool never = flags.has("never-salt");
  const bool tuned = flags.has("hot-fraction") || flags.has("max-salts");
  if (never == tuned) {
    throw UsageError(never ? "policy add: --never-salt takes no --hot-fraction or --max-salts"
                           : "policy add: give --never-salt, or --hot-fraction and/or --max-salts");
  }
  const std::string reason = reason_flag(flags, "policy add");
  const std::string& topic = flags.positional()[0];
  const std::string prefix = key_of(flags, flags.positional()[1]);
  json body{{"reason", reason}};
  api::put_key(body, prefix);
  std::string what;
  if (never) {
    body["never_salt"] = true;
    what = "never salted";
  } else {
    if (flags.has("hot-fraction")) {
      body["hot_fraction"] = flags.number("hot-fraction", 0, 1000, 0);
      what += "hot_fraction " + *flags.value("hot-fraction");
    }
    if (flags.has("max-salts")) {
      body["max_salts"] = flags.integer("max-salts", 1, kMaxPartitions);
      what += std::string(what.empty() ? "" : ", ") + "max_salts " + *flags.value("max-salts");
    }
  }
  Reply r = remote.call("POST", topic_path(topic) + "/policies", &body, true);
  print_change(flags, r,
               "keys with prefix " + printable_key(prefix) + " on " + topic + ": " + what, out);
  return kExitOk;
}

int cmd_policy_list(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 1, kPolicyUsage);
  Reply r = remote.call("GET", topic_path(flags.positional()[0]) + "/policies");
  if (flags.has("json")) {
    print_json(out, r.doc);
    return kExitOk;
  }
  Table t({"PREFIX", "NEVER_SALT", "HOT_FRACTION", "MAX_SALTS", "BY", "CREATED", "REASON"},
          {false, false, true, true, false, false, false});
  for (const api::Policy& p : r.as<api::PoliciesAnswer>().policies) {
    char hot[32];
    std::snprintf(hot, sizeof hot, "%g", p.hot_fraction);
    t.add({printable_key(p.prefix), p.never_salt ? "yes" : "no",
           p.hot_fraction > 0 ? hot : "topic",
           p.max_salts > 0 ? std::to_string(p.max_salts) : "topic",
           p.by, utc_time(p.created_at_ms), p.reason});
  }
  t.print(out);
  return kExitOk;
}

int cmd_policy_remove(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 2, kPolicyUsage);
  const std::string& topic = flags.positional()[0];
  const std::string prefix = key_of(flags, flags.positional()[1]);
  Reply r = remote.call("DELETE", topic_path(topic) + "/policies?" + key_query(prefix), nullptr,
                        true);
  print_change(flags, r, "removed the policy of prefix " + printable_key(prefix) + " on " + topic,
               out);
  return kExitOk;
}

int cmd_delete_topic(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 1, "delete-topic TOPIC --reason TEXT");
  const std::string reason = reason_flag(flags, "delete-topic");
  const std::string& topic = flags.positional()[0];
  Reply r =
      remote.call("DELETE", topic_path(topic) + "?reason=" + percent_encode(reason), nullptr, true);
  if (flags.has("json")) {
    print_json(out, r.doc);
  } else {
    out << "deleted topic " << topic << " (its pins, denies and list; versions continue above "
        << r.as<api::OperatorResult>().version << " if it returns)\n";
  }
  return kExitOk;
}

int cmd_audit(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 0, "audit [--limit N] [--topic T] [--json]");
  const int64_t limit = flags.integer("limit", 1, 100000, 50);
  const auto topic = flags.value("topic");
  Reply r = remote.call("GET", "/v1/audit?limit=" + std::to_string(limit), nullptr, true);
  api::AuditAnswer shown;
  for (api::AuditEntry& e : r.as<api::AuditAnswer>().entries) {
    if (!topic || e.topic == *topic) shown.entries.push_back(std::move(e));
  }
  if (flags.has("json")) {
    print_json(out, json(shown));
    return kExitOk;
  }
  Table t({"TIME", "WHO", "ACTION", "TOPIC", "KEY", "VERSION", "DETAIL"},
          {false, false, false, false, false, true, false});
  for (const api::AuditEntry& e : shown.entries) {
    std::string detail;
    if (!(e.detail.is_object() && e.detail.empty())) {
      detail = e.detail.is_string() ? e.detail.get<std::string>()
                                    : e.detail.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    t.add({utc_time(e.at_ms), e.who, e.action, e.topic, printable_key(e.key),
           std::to_string(e.version), detail});
  }
  t.print(out);
  return kExitOk;
}

int run_pin(std::span<const std::string> args, Io io) {
  return remote_main("pin", args, io,
                     {{"salts", true}, {"ttl", true}, {"reason", true}, {"b64", false}}, cmd_pin);
}
int run_unpin(std::span<const std::string> args, Io io) {
  return remote_main(
      "unpin", args, io, {{"b64", false}},
      [](const Flags& f, Remote& r, std::ostream& o) { return cmd_unpin_allow(f, r, o, true); });
}
int run_deny(std::span<const std::string> args, Io io) {
  return remote_main("deny", args, io, {{"reason", true}, {"b64", false}}, cmd_deny);
}
int run_allow(std::span<const std::string> args, Io io) {
  return remote_main(
      "allow", args, io, {{"b64", false}},
      [](const Flags& f, Remote& r, std::ostream& o) { return cmd_unpin_allow(f, r, o, false); });
}
int run_policy(std::span<const std::string> args, Io io) {
  if (args.empty()) {
    throw UsageError(std::string("policy: which? usage: hotkeyctl ") + kPolicyUsage);
  }
  const std::string& action = args[0];
  const auto rest = args.subspan(1);
  if (action == "add") {
    return remote_main("policy add", rest, io,
                       {{"never-salt", false},
                        {"hot-fraction", true},
                        {"max-salts", true},
                        {"reason", true},
                        {"b64", false}},
                       cmd_policy_add);
  }
  if (action == "list") return remote_main("policy list", rest, io, {}, cmd_policy_list);
  if (action == "remove") {
    return remote_main("policy remove", rest, io, {{"b64", false}}, cmd_policy_remove);
  }
  throw UsageError("policy: unknown action '" + action + "' (add, list or remove)");
}
int run_delete_topic(std::span<const std::string> args, Io io) {
  return remote_main("delete-topic", args, io, {{"reason", true}}, cmd_delete_topic);
}
int run_audit(std::span<const std::string> args, Io io) {
  return remote_main("audit", args, io, {{"limit", true}, {"topic", true}}, cmd_audit);
}

}  // namespace

const Command kPinCommand = {
    "pin", "force salting of a key (operator)",
    "usage: hotkeyctl pin TOPIC KEY [--salts N] [--ttl DUR] --reason TEXT [--b64]\n"
    "\n"
    "Salts KEY whether or not it is detected hot; the reason goes into the audit log.\n"
    "\n"
    "  --salts N      number of salts (default: from the key's share)\n"
    "  --ttl DUR      expire the pin after DUR: 90s, 30m, 2h, 1d, 1w (default: never)\n"
    "  --reason TEXT  why (required)\n"
    "  --b64          KEY is the base64 of the key bytes\n" HOTKEY_REMOTE_FLAGS,
    &run_pin};

const Command kUnpinCommand = {
    "unpin", "remove an operator pin",
    "usage: hotkeyctl unpin TOPIC KEY [--b64]\n"
    "\n"
    "Removes the pin; the key stays salted only while detection still finds it hot.\n"
    "\n"
    "  --b64          KEY is the base64 of the key bytes\n" HOTKEY_REMOTE_FLAGS,
    &run_unpin};

const Command kDenyCommand = {
    "deny", "never salt a key (ordering-critical keys; operator)",
    "usage: hotkeyctl deny TOPIC KEY --reason TEXT [--b64]\n"
    "\n"
    "The key is never salted, however hot: for keys whose records must stay in order.\n"
    "\n"
    "  --reason TEXT  why (required)\n"
    "  --b64          KEY is the base64 of the key bytes\n" HOTKEY_REMOTE_FLAGS,
    &run_deny};

const Command kAllowCommand = {
    "allow", "lift a deny (operator)",
    "usage: hotkeyctl allow TOPIC KEY [--b64]\n"
    "\n"
    "  --b64          KEY is the base64 of the key bytes\n" HOTKEY_REMOTE_FLAGS,
    &run_allow};

const Command kPolicyCommand = {
    "policy", "rules for every key with a prefix: never salt, or own thresholds (operator)",
    "usage: hotkeyctl policy add TOPIC PREFIX --never-salt --reason TEXT [--b64]\n"
    "       hotkeyctl policy add TOPIC PREFIX [--hot-fraction F] [--max-salts N] --reason TEXT\n"
    "                            [--b64]\n"
    "       hotkeyctl policy list TOPIC\n"
    "       hotkeyctl policy remove TOPIC PREFIX [--b64]\n"
    "\n"
    "A policy applies to every key that starts with PREFIX; the longest matching prefix wins,\n"
    "and a pin or deny of the exact key wins over any policy. Adding a prefix's policy again\n"
    "replaces it; at most 256 per topic.\n"
    "\n"
    "  --never-salt      never salt these keys, however hot (ordering-critical families)\n"
    "  --hot-fraction F  these keys are hot at F / partitions (instead of the topic's)\n"
    "  --max-salts N     at most N salts for these keys\n"
    "  --reason TEXT     why (required for add; goes into the audit log)\n"
    "  --b64             PREFIX is the base64 of the prefix bytes\n" HOTKEY_REMOTE_FLAGS,
    &run_policy};

const Command kDeleteTopicCommand = {
    "delete-topic", "drop a topic with its pins, denies and list (operator)",
    "usage: hotkeyctl delete-topic TOPIC --reason TEXT\n"
    "\n"
    "Drops the topic from the coordinator's memory and store, freeing its max_topics slot\n"
    "(audited as delete_topic). A report or pin for it later creates it again, with list\n"
    "versions above the ones it had. Unknown topic: exit 5.\n"
    "\n"
    "  --reason TEXT  why (required; goes into the audit log)\n" HOTKEY_REMOTE_FLAGS,
    &run_delete_topic};

const Command kAuditCommand = {"audit",
                               "who pinned, unpinned, denied or allowed what, newest first",
                               "usage: hotkeyctl audit [--limit N] [--topic T] [--json]\n"
                               "\n"
                               "  --limit N      entries to fetch (default 50)\n"
                               "  --topic T      only this topic's entries\n" HOTKEY_REMOTE_FLAGS,
                               &run_audit};

}  // namespace hotkeyctl
