// Read-only remote commands: list, top, show, cluster.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hotkey/api_model.h"
#include "hotkey/key_codec.h"
#include "remote_client.h"
#include "table.h"

namespace hotkeyctl {
namespace {

namespace api = hotkey::api;
using hotkey::printable_key;
using nlohmann::json;

int cmd_list(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 0, "list [--json]");
  Reply r = remote.call("GET", "/v1/topics");
  if (flags.has("json")) {
    print_json(out, r.doc);
    return kExitOk;
  }
  const auto topics = r.as<api::TopicsAnswer>().topics;
  // Cluster mode names each topic's owner; a topic whose owner did not answer shows what the
  // member knows without it ("-" for the owner's measurements).
  const bool cluster = std::any_of(topics.begin(), topics.end(), [](const api::TopicSummary& tp) {
    return tp.owner.has_value();
  });
  // HOT counts every listed key; BALANCE those of them salted only to level the partitions.
  std::vector<std::string> head{"TOPIC",     "PARTITIONS", "RATE/S",    "SKEW",
                                "PREDICTED", "IDLE",       "PRODUCERS", "HOT",
                                "BALANCE",   "PINS",       "DENIES",    "VERSION"};
  std::vector<bool> right{false, true, true, true, true, true, true, true, true, true, true, true};
  if (cluster) {
    head.push_back("OWNER");
    right.push_back(false);
  }
  Table t(head, right);
  for (const api::TopicSummary& tp : topics) {
    const bool measured = tp.owner_answered;
    std::vector<std::string> row{tp.topic,
                                 std::to_string(tp.partitions),
                                 measured ? fixed(tp.rate, 1) : "-",
                                 measured ? fixed(tp.skew, 2) + (tp.skew > 2.0 ? "!" : "") : "-",
                                 measured ? fixed(tp.predicted_skew, 2) : "-",
                                 measured ? pct(tp.idle_partitions_ratio) : "-",
                                 measured ? std::to_string(tp.producers) : "-",
                                 std::to_string(tp.hot_keys),
                                 std::to_string(tp.balance_keys),
                                 std::to_string(tp.pins),
                                 std::to_string(tp.denies),
                                 std::to_string(tp.version)};
    if (cluster) {
      const std::string owner = tp.owner.value_or("");
      row.push_back(owner.empty() ? "(none)" : measured ? owner : owner + " (no answer)");
    }
    t.add(row);
  }
  t.print(out);
  return kExitOk;
}

std::string key_state(const api::TopEntry& e) {
  std::string s;
  if (e.pinned) {
    s = "pinned";
  } else if (e.hot) {
    s = e.source == "balance" ? "balance" : "hot";
  }
  if (e.denied) s += s.empty() ? "denied" : ",denied";
  return s.empty() ? "cold" : s;
}

int cmd_top(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 1, "top TOPIC [--limit N] [--json]");
  const int64_t n = flags.integer("limit", 1, 1000, 20);
  Reply r = remote.call("GET", topic_path(flags.positional()[0]) + "/top?n=" + std::to_string(n));
  if (flags.has("json")) {
    print_json(out, r.doc);
    return kExitOk;
  }
  Table t({"KEY", "RATE/S", "SHARE", "COUNT", "ERROR", "PARTITION", "STATE"},
          {false, true, true, true, true, true, false});
  for (const api::TopEntry& e : r.as<api::TopAnswer>().items) {
    t.add({printable_key(e.key), fixed(e.rate, 1), pct(e.share), std::to_string(e.count),
           std::to_string(e.error), std::to_string(e.partition), key_state(e)});
  }
  t.print(out);
  return kExitOk;
}

// The entry of `items` for `key`, if any.
template <typename T>
std::optional<T> find_key(const std::vector<T>& items, const std::string& key) {
  for (const T& e : items) {
    if (e.key == key) return e;
  }
  return std::nullopt;
}

// The key's entry in a published hot-key list document (GET /v1/hotkeys), or null.
const json* listed_entry(const json& list, const std::string& key) {
  if (!list.is_object()) return nullptr;
  auto keys = list.find("keys");
  if (keys == list.end() || !keys->is_array()) return nullptr;
  for (const json& e : *keys) {
    if (api::get_key(e) == key) return &e;
  }
  return nullptr;
}

std::string json_integer(const json& j, const char* name) {
  auto it = j.is_object() ? j.find(name) : j.end();
  if (!j.is_object() || it == j.end() || !it->is_number()) return "-";
  if (it->is_number_unsigned()) return std::to_string(it->get<uint64_t>());
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return fixed(it->get<double>(), 0);
}

int cmd_show(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 2, "show TOPIC KEY [--b64] [--json]");
  const std::string& topic = flags.positional()[0];
  const std::string key = key_of(flags, flags.positional()[1]);
  // The summary carries the topic's pins and denies (with reasons); 404 for unknown topics.
  const auto summary = remote.call("GET", topic_path(topic)).as<api::TopicDetail>();
  const auto top = remote.call("GET", topic_path(topic) + "/top?n=1000").as<api::TopAnswer>();
  Reply list = remote.call("GET", "/v1/hotkeys?topic=" + percent_encode(topic));
  const std::optional<api::TopEntry> top_entry = find_key(top.items, key);
  const json* listed = listed_entry(list.doc, key);
  const std::optional<api::Pin> pin = find_key(summary.pinned, key);
  const std::optional<api::Deny> deny = find_key(summary.denied, key);

  if (flags.has("json")) {
    json doc{{"topic", topic}};
    api::put_key(doc, key);
    doc["top"] = top_entry ? json(*top_entry) : json();
    doc["listed"] = listed ? *listed : json();
    doc["pin"] = pin ? json(*pin) : json();
    doc["deny"] = deny ? json(*deny) : json();
    doc["list_version"] = list.doc.is_object() ? list.doc.value("version", json()) : json();
    print_json(out, doc);
    return kExitOk;
  }
  out << "topic      " << topic << " (" << summary.summary.partitions << " partitions, hash "
      << (summary.summary.hash.empty() ? "?" : summary.summary.hash) << ", list version "
      << json_integer(list.doc, "version") << ")\n";
  out << "key        " << printable_key(key) << '\n';
  std::string state;
  if (deny) {
    state = "denied: never salted";
  } else if (listed) {
    const auto source = listed->find("source");
    const auto balance = listed->find("balance");
    const bool pinned = source != listed->end() && source->is_string() && *source == "pinned";
    const bool levels = balance != listed->end() && balance->is_boolean() && balance->get<bool>();
    state = pinned   ? "salted (pinned)"
            : levels ? "salted (balance: below the hot threshold, levels the partitions)"
                     : "salted (detected hot)";
  } else if (pin) {
    state = "pinned (not salted yet)";
  } else {
    state = top_entry && top_entry->hot ? "hot (not salted yet)" : "not salted";
  }
  out << "state      " << state << '\n';
  if (top_entry) {
    out << "traffic    " << fixed(top_entry->rate, 1) << " msg/s, " << pct(top_entry->share)
        << " of the topic (count " << top_entry->count << ", error bound " << top_entry->error
        << ")";
    if (top_entry->partition >= 0) out << ", home partition " << top_entry->partition;
    out << '\n';
  } else {
    out << "traffic    not among the fleet-wide top 1000 keys\n";
  }
  if (pin) {
    out << "pin        by " << (pin->by.empty() ? "?" : pin->by) << ": " << pin->reason;
    if (pin->salts > 0) out << "; " << pin->salts << " salts";
    out << "; "
        << (pin->expires_at_ms > 0 ? "expires " + utc_time(pin->expires_at_ms) : "no expiry")
        << '\n';
  }
  if (deny) {
    out << "deny       by " << (deny->by.empty() ? "?" : deny->by) << ": " << deny->reason << '\n';
  }
  if (listed) {
    out << "salts\n";
    Table t({"SALT", "PARTITION", "WEIGHT"}, {true, true, true});
    if (auto salts = listed->find("salts"); salts != listed->end() && salts->is_array()) {
      for (const json& s : *salts) {
        const auto weight = s.is_object() ? s.find("weight") : s.end();
        const double w =
            s.is_object() && weight != s.end() && weight->is_number() ? weight->get<double>() : 0.0;
        t.add({json_integer(s, "salt"), json_integer(s, "partition"), fixed(w, 3)});
      }
    }
    t.print(out, "  ");
  }
  return kExitOk;
}

// GET /v1/cluster: the members and which of them owns each topic.
int cmd_cluster(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 0, "cluster [--json]");
  Reply r = remote.call("GET", "/v1/cluster");
  if (flags.has("json")) {
    print_json(out, r.doc);
    return kExitOk;
  }
  const auto view = r.as<api::ClusterView>();
  if (!view.cluster()) {
    out << "single-node mode (the coordinator was started without --kafka)\n";
    return kExitOk;
  }
  out << "member " << view.url << " (" << view.member_id << "), group " << view.group
      << ", generation " << view.generation << "\n";
  // The members by their ownership heartbeats; a member writes lists once it owns a topic.
  out << "group members (" << view.group_members.size() << "):\n";
  Table g({"MEMBER", "PARTITIONS", "WRITES LISTS", "HEARTBEAT"}, {false, false, false, true});
  for (const api::GroupMember& m : view.group_members) {
    std::string parts;
    for (int32_t p : m.partitions) parts += (parts.empty() ? "" : ",") + std::to_string(p);
    g.add({m.url, parts.empty() ? "-" : parts, m.writes_lists ? "yes" : "no",
           m.url == view.url ? "self" : std::to_string(m.heartbeat_age_ms) + " ms ago"});
  }
  g.print(out, "  ");
  out << "members writing lists:";
  for (const std::string& m : view.members) out << " " << m;
  out << "\n";
  Table t({"TOPIC", "OWNER"}, {false, false});
  for (const auto& [topic, owner] : view.owners) t.add({topic, owner});
  t.print(out);
  return kExitOk;
}

int run_list(std::span<const std::string> args, Io io) {
  return remote_main("list", args, io, {}, cmd_list);
}
int run_top(std::span<const std::string> args, Io io) {
  return remote_main("top", args, io, {{"limit", true}}, cmd_top);
}
int run_show(std::span<const std::string> args, Io io) {
  return remote_main("show", args, io, {{"b64", false}}, cmd_show);
}
int run_cluster(std::span<const std::string> args, Io io) {
  return remote_main("cluster", args, io, {}, cmd_cluster);
}

}  // namespace

const Command kListCommand = {
    "list", "topics on a coordinator: rate, skew, hot keys, pins, version",
    "usage: hotkeyctl list [--json] [--url URL]\n"
    "\n"
    "One line per topic: partitions, fleet-wide rate, measured skew (max/avg partition load,\n"
    "'!' past 2.0), predicted skew under the published list, idle partitions, producers, hot\n"
    "keys, pins, denies and the list version.\n" HOTKEY_REMOTE_FLAGS,
    &run_list};

const Command kTopCommand = {
    "top", "fleet-wide top keys of a topic, with hot/pinned/denied state",
    "usage: hotkeyctl top TOPIC [--limit N] [--json] [--url URL]\n"
    "\n"
    "The coordinator's merged Space-Saving top-N (default 20, at most 1000): rate, share,\n"
    "count and its error bound, the partition the key hashes to and its state.\n"
    "\n"
    "  --limit N      keys to show (1..1000, default 20)\n" HOTKEY_REMOTE_FLAGS,
    &run_top};

const Command kShowCommand = {
    "show", "one key of a topic: state, traffic, salt table, pin/deny",
    "usage: hotkeyctl show TOPIC KEY [--b64] [--json] [--url URL]\n"
    "\n"
    "Everything the coordinator knows about KEY: salted or not and why, its traffic, the\n"
    "salt table (salt -> partition, weight) and the operator pin or deny with its reason.\n"
    "\n"
    "  --b64          KEY is the base64 of the key bytes (binary keys)\n" HOTKEY_REMOTE_FLAGS,
    &run_show};

const Command kClusterCommand = {
    "cluster", "cluster mode: members, generation and the owner of every topic",
    "usage: hotkeyctl cluster [--json] [--url URL]\n"
    "\n"
    "GET /v1/cluster of any member (docs/CLUSTER.md): this member, the group's members as\n"
    "Kafka describes them (their reports partitions, whether they write lists), and which\n"
    "member owns each topic (ask that one for top keys and loads).\n" HOTKEY_REMOTE_FLAGS,
    &run_cluster};

}  // namespace hotkeyctl
