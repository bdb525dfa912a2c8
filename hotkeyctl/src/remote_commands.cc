#include "remote_commands.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "hotkey/key_codec.h"

namespace hotkey::ctl {
namespace {

using nlohmann::json;

constexpr const char* kDefaultUrl = "http://127.0.0.1:8470";
constexpr const char* kExportFormat = "hotkey-operator-state/1";

// A bad command line; what() is printed after "hotkeyctl: ".
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A failed call that already knows its exit code and message.
struct CallFailure {
  int code;
  std::string message;
};

// ---------------------------------------------------------------- command line

struct Options {
  std::string url;
  std::string token;
  bool json_out = false;
  bool b64 = false;
  bool dry_run = false;
  bool help = false;
  std::optional<std::string> salts, ttl, reason, n, limit, topic, out;
  double timeout_s = 10;
  std::vector<std::string> positional;
};

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  o.url = env_or("HOTKEY_URL", kDefaultUrl);
  o.token = env_or("HOTKEY_TOKEN", "");
  const std::map<std::string, std::optional<std::string> Options::*> valued = {
      {"--salts", &Options::salts}, {"--ttl", &Options::ttl},     {"--reason", &Options::reason},
      {"-n", &Options::n},          {"--limit", &Options::limit}, {"--topic", &Options::topic},
      {"--out", &Options::out},
  };
  bool only_positional = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (only_positional || arg.size() < 2 || arg[0] != '-') {
      o.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      only_positional = true;
      continue;
    }
    std::optional<std::string> inline_value;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) throw UsageError(arg + " needs a value");
      return args[++i];
    };
    auto flag = [&](bool& target) {
      if (inline_value) throw UsageError(arg + " takes no value");
      target = true;
    };
    if (arg == "--url") {
      o.url = value();
    } else if (arg == "--token") {
      o.token = value();
    } else if (arg == "--timeout") {
      std::string v = value();
      char* end = nullptr;
      o.timeout_s = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(o.timeout_s > 0) || o.timeout_s > 3600) {
        throw UsageError("--timeout must be seconds in (0, 3600], got '" + v + "'");
      }
    } else if (arg == "--json") {
      flag(o.json_out);
    } else if (arg == "--b64") {
      flag(o.b64);
    } else if (arg == "--dry-run") {
      flag(o.dry_run);
    } else if (arg == "--help" || arg == "-h") {
      flag(o.help);
    } else if (auto it = valued.find(arg); it != valued.end()) {
      o.*(it->second) = value();
    } else {
      throw UsageError("unknown option '" + arg + "'");
    }
  }
  return o;
}

uint64_t parse_count(const std::string& what, const std::string& text, uint64_t lo, uint64_t hi) {
  if (text.empty() || text.size() > 12 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw UsageError(what + " must be a whole number, got '" + text + "'");
  }
  uint64_t v = std::stoull(text);
  if (v < lo || v > hi) {
    throw UsageError(what + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "], got " + text);
  }
  return v;
}

// "90s", "30m", "2h", "1d", "1w" or plain seconds.
int64_t parse_duration_s(const std::string& text) {
  std::string digits = text;
  int64_t unit = 1;
  if (!text.empty() && !(text.back() >= '0' && text.back() <= '9')) {
    static const std::map<char, int64_t> units = {
        {'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 604800}};
    auto it = units.find(text.back());
    if (it == units.end()) {
      throw UsageError("--ttl must look like 90s, 30m, 2h, 1d or 1w, got '" + text + "'");
    }
    unit = it->second;
    digits = text.substr(0, text.size() - 1);
  }
  uint64_t n = parse_count("--ttl", digits, 1, 10u * 365 * 86400);
  int64_t s = static_cast<int64_t>(n) * unit;
  if (s > int64_t{10} * 365 * 86400) throw UsageError("--ttl is longer than ten years");
  return s;
}

// The key bytes of a KEY argument (--b64: the argument is base64).
std::string key_arg(const Options& o, const std::string& text) {
  if (!o.b64) {
    if (text.empty()) throw UsageError("KEY must not be empty");
    return text;
  }
  auto bytes = base64_decode(text);
  if (!bytes) throw UsageError("--b64 was given but KEY is not valid base64: '" + text + "'");
  if (bytes->empty()) throw UsageError("KEY must not be empty");
  return *bytes;
}

// ---------------------------------------------------------------- HTTP

std::string percent_encode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// ?key=... or ?key_b64=... for a key's bytes.
std::string key_query(std::string_view key) {
  EncodedKey e = encode_key(key);
  return std::string(e.field) + "=" + percent_encode(e.value);
}

std::string topic_path(const std::string& topic) { return "/v1/topics/" + percent_encode(topic); }

struct Reply {
  int status = 0;
  std::string body;
  json doc;  // null when the body is not JSON
};

// One coordinator, reached over HTTP(S) at --url. Not thread-safe (one command at a time).
class Remote {
 public:
  explicit Remote(const Options& o) : url_(o.url), token_(o.token) {
    // scheme://host[:port][/prefix]
    auto scheme_end = url_.find("://");
    if (scheme_end == std::string::npos) {
      throw UsageError("--url must look like http://HOST:PORT, got '" + url_ + "'");
    }
    std::string scheme = url_.substr(0, scheme_end);
    if (scheme != "http" && scheme != "https") {
      throw UsageError("--url scheme must be http or https, got '" + scheme + "'");
    }
    auto path_start = url_.find('/', scheme_end + 3);
    std::string origin = url_.substr(0, path_start);
    if (origin.size() == scheme_end + 3) throw UsageError("--url has no host: '" + url_ + "'");
    if (path_start != std::string::npos) prefix_ = url_.substr(path_start);
    while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
    client_ = std::make_unique<httplib::Client>(origin);
    auto secs = static_cast<time_t>(o.timeout_s);
    auto usecs = static_cast<time_t>((o.timeout_s - static_cast<double>(secs)) * 1e6);
    client_->set_connection_timeout(secs, usecs);
    client_->set_read_timeout(secs, usecs);
    client_->set_write_timeout(secs, usecs);
    client_->set_keep_alive(true);
  }

  // Sends the request; throws CallFailure for transport errors and error statuses.
  Reply call(const std::string& method, const std::string& path, const json* body = nullptr,
             bool operator_call = false) {
    if (operator_call && token_.empty()) {
      throw CallFailure{kExitAuth,
                        "this command needs the operator token: pass --token TOKEN or set "
                        "HOTKEY_TOKEN"};
    }
    httplib::Headers headers = {{"Accept", "application/json"}};
    if (!token_.empty()) headers.emplace("Authorization", "Bearer " + token_);
    const std::string full = prefix_ + path;
    const std::string payload =
        body ? body->dump(-1, ' ', false, json::error_handler_t::strict) : "";
    httplib::Result res{nullptr, httplib::Error::Unknown};
    if (method == "GET") {
      res = client_->Get(full, headers);
    } else if (method == "POST") {
      res = client_->Post(full, headers, payload, "application/json");
    } else {
      res = client_->Delete(full, headers);
    }
    if (!res) {
      throw CallFailure{kExitUnreachable, "cannot reach the coordinator at " + url_ + " (" +
                                              httplib::to_string(res.error()) +
                                              "); is it running? Set --url or HOTKEY_URL"};
    }
    Reply r{res->status, res->body, json()};
    r.doc = json::parse(r.body, nullptr, false);
    if (r.doc.is_discarded()) r.doc = json();
    if (r.status < 300) return r;
    std::string msg;
    if (r.doc.is_object() && r.doc.contains("error") && r.doc["error"].is_string()) {
      msg = r.doc["error"].get<std::string>();
    } else {
      msg = r.body.substr(0, 300);
    }
    std::string what = method + " " + path + ": HTTP " + std::to_string(r.status) + ": " + msg;
    if (r.status == 401 || r.status == 403) {
      throw CallFailure{kExitAuth, what + (token_.empty() ? " (pass --token or set HOTKEY_TOKEN)"
                                                          : " (check --token / HOTKEY_TOKEN)")};
    }
    if (r.status == 404) throw CallFailure{kExitNotFound, what};
    throw CallFailure{kExitFailed, what};
  }

  const std::string& url() const { return url_; }

 private:
  std::string url_;
  std::string token_;
  std::string prefix_;
  std::unique_ptr<httplib::Client> client_;
};

// ---------------------------------------------------------------- output

// Column-aligned text table; numeric columns right-aligned.
class Table {
 public:
  Table(std::vector<std::string> header, std::vector<bool> right)
      : header_(std::move(header)), right_(std::move(right)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const {
    std::vector<size_t> w(header_.size());
    auto width = [](const std::string& s) {
      // Count UTF-8 code points, not bytes, so non-ASCII keys line up.
      return static_cast<size_t>(
          std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
    };
    for (size_t c = 0; c < header_.size(); ++c) w[c] = width(header_[c]);
    for (const auto& r : rows_) {
      for (size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], width(r[c]));
    }
    auto line = [&](const std::vector<std::string>& r) {
      std::string s;
      for (size_t c = 0; c < w.size(); ++c) {
        const std::string cell = c < r.size() ? r[c] : "";
        std::string pad(w[c] - std::min(w[c], width(cell)), ' ');
        if (c > 0) s += "  ";
        s += right_[c] ? pad + cell : (c + 1 == w.size() ? cell : cell + pad);
      }
      while (!s.empty() && s.back() == ' ') s.pop_back();
      out << s << '\n';
    };
    line(header_);
    for (const auto& r : rows_) line(r);
  }

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}
std::string pct(double v) { return fixed(v * 100, 1) + "%"; }

double num(const json& j, const char* name, double fallback = 0) {
  if (!j.is_object()) return fallback;
  auto it = j.find(name);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}
std::string str(const json& j, const char* name, const std::string& fallback = "") {
  if (!j.is_object()) return fallback;
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}
std::string integer(const json& j, const char* name) {
  if (!j.is_object()) return "-";
  auto it = j.find(name);
  if (it == j.end() || !it->is_number()) return "-";
  if (it->is_number_unsigned()) return std::to_string(it->get<uint64_t>());
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return fixed(it->get<double>(), 0);
}
bool flag(const json& j, const char* name) {
  if (!j.is_object()) return false;
  auto it = j.find(name);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

// The key bytes of a JSON object carrying "key" or "key_b64".
std::string json_key(const json& j) {
  if (!j.is_object()) return "";
  if (auto it = j.find("key_b64"); it != j.end() && it->is_string()) {
    return base64_decode(it->get<std::string>()).value_or("");
  }
  return str(j, "key");
}

const json& array_field(const json& doc, const char* name) {
  static const json empty = json::array();
  if (doc.is_array()) return doc;
  if (!doc.is_object()) return empty;
  auto it = doc.find(name);
  return it != doc.end() && it->is_array() ? *it : empty;
}

std::string utc_time(int64_t ms) {
  if (ms <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void print_json(std::ostream& out, const json& doc) {
  out << doc.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

void need_positional(const Options& o, size_t n, const char* usage) {
  if (o.positional.size() != n) {
    throw UsageError(std::string("usage: hotkeyctl ") + usage);
  }
}

// ---------------------------------------------------------------- commands

int cmd_list(const Options& o, Remote& remote, std::ostream& out) {
  need_positional(o, 0, "list [--json]");
  Reply r = remote.call("GET", "/v1/topics");
  if (o.json_out) {
    print_json(out, r.doc);
    return kExitOk;
  }
  Table t({"TOPIC", "PARTITIONS", "RATE/S", "SKEW", "PREDICTED", "IDLE", "PRODUCERS", "HOT", "PINS",
           "DENIES", "VERSION"},
          {false, true, true, true, true, true, true, true, true, true, true});
  for (const json& tp : array_field(r.doc, "topics")) {
    double skew = num(tp, "skew", 0);
    t.add({str(tp, "topic"), integer(tp, "partitions"), fixed(num(tp, "rate"), 1),
           fixed(skew, 2) + (skew > 2.0 ? "!" : ""), fixed(num(tp, "predicted_skew", skew), 2),
           pct(num(tp, "idle_ratio")), integer(tp, "producers"), integer(tp, "hot_keys"),
           integer(tp, "pins"), integer(tp, "denies"), integer(tp, "version")});
  }
  t.print(out);
  return kExitOk;
}

std::string key_state(const json& e) {
  std::string s;
  if (flag(e, "pinned")) s = "pinned";
  if (flag(e, "hot") && s.empty()) s = "hot";
  if (flag(e, "denied")) s += s.empty() ? "denied" : ",denied";
  return s.empty() ? "cold" : s;
}

int cmd_top(const Options& o, Remote& remote, std::ostream& out) {
  need_positional(o, 1, "top TOPIC [-n N] [--json]");
  uint64_t n = o.n ? parse_count("-n", *o.n, 1, 100000) : 20;
  Reply r = remote.call("GET", topic_path(o.positional[0]) + "/top?n=" + std::to_string(n));
  if (o.json_out) {
    print_json(out, r.doc);
    return kExitOk;
  }
  Table t({"KEY", "RATE/S", "SHARE", "COUNT", "ERROR", "PARTITION", "STATE"},
          {false, true, true, true, true, true, false});
  for (const json& e : array_field(r.doc, "top")) {
    t.add({printable_key(json_key(e)), fixed(num(e, "rate"), 1), pct(num(e, "share")),
           integer(e, "count"), integer(e, "error"), integer(e, "partition"), key_state(e)});
  }
  t.print(out);
  return kExitOk;
}

const json* find_key(const json& array, const std::string& key) {
  for (const json& e : array) {
    if (e.is_string() ? e.get<std::string>() == key : json_key(e) == key) return &e;
  }
  return nullptr;
}

int cmd_show(const Options& o, Remote& remote, std::ostream& out) {
  need_positional(o, 2, "show TOPIC KEY [--b64] [--json]");
  const std::string& topic = o.positional[0];
  const std::string key = key_arg(o, o.positional[1]);
  Reply summary = remote.call("GET", topic_path(topic));
  Reply top = remote.call("GET", topic_path(topic) + "/top?n=1000");
  Reply list = remote.call("GET", "/v1/hotkeys?topic=" + percent_encode(topic));
  std::optional<Reply> pins, denies;
  try {
    pins = remote.call("GET", topic_path(topic) + "/pins");
    denies = remote.call("GET", topic_path(topic) + "/denies");
  } catch (const CallFailure& f) {
    // Pins and denies may sit behind the operator token; the rest is still worth showing.
    if (f.code != kExitAuth) throw;
  }
  const json* top_entry = find_key(array_field(top.doc, "top"), key);
  const json* listed = find_key(array_field(list.doc, "keys"), key);
  const json* pin = pins ? find_key(array_field(pins->doc, "pins"), key) : nullptr;
  const json* deny = denies ? find_key(array_field(denies->doc, "denies"), key) : nullptr;
  const bool denied_in_list = find_key(array_field(list.doc, "denied"), key) != nullptr;

  if (o.json_out) {
    EncodedKey ek = encode_key(key);
    json doc{{"topic", topic}, {std::string(ek.field), ek.value}};
    doc["top"] = top_entry ? *top_entry : json();
    doc["listed"] = listed ? *listed : json();
    doc["pin"] = pin ? *pin : json();
    doc["deny"] = deny ? *deny : json();
    doc["list_version"] = list.doc.is_object() ? list.doc.value("version", json()) : json();
    print_json(out, doc);
    return kExitOk;
  }
  out << "topic      " << topic << " (" << integer(summary.doc, "partitions")
      << " partitions, hash " << str(list.doc, "hash", str(summary.doc, "hash", "?"))
      << ", list version " << integer(list.doc, "version") << ")\n";
  out << "key        " << printable_key(key) << '\n';
  std::string state;
  if (listed)
    state = str(*listed, "source", "detected") == "pinned" ? "salted (pinned)"
                                                           : "salted (detected hot)";
  if (deny || denied_in_list) state = "denied: never salted";
  if (state.empty()) state = top_entry && flag(*top_entry, "hot") ? "hot" : "not salted";
  out << "state      " << state << '\n';
  if (top_entry) {
    out << "traffic    " << fixed(num(*top_entry, "rate"), 1) << " msg/s, "
        << pct(num(*top_entry, "share")) << " of the topic (count " << integer(*top_entry, "count")
        << " \u00b1 " << integer(*top_entry, "error") << ")";
    if (num(*top_entry, "partition", -1) >= 0)
      out << ", home partition " << integer(*top_entry, "partition");
    out << '\n';
  } else {
    out << "traffic    not among the fleet-wide top 1000 keys\n";
  }
  if (pin) {
    out << "pin        by " << str(*pin, "by", "?") << ": " << str(*pin, "reason");
    if (num(*pin, "salts") > 0) out << "; salts " << integer(*pin, "salts");
    double exp = num(*pin, "expires_at_ms");
    out << "; " << (exp > 0 ? "expires " + utc_time(static_cast<int64_t>(exp)) : "no expiry")
        << '\n';
  }
  if (deny)
    out << "deny       by " << str(*deny, "by", "?") << ": " << str(*deny, "reason") << '\n';
  if (listed) {
    out << "salts\n";
    Table t({"SALT", "PARTITION", "WEIGHT"}, {true, true, true});
    for (const json& s : array_field(*listed, "salts")) {
      t.add({integer(s, "salt"), integer(s, "partition"), fixed(num(s, "weight"), 3)});
    }
    std::ostringstream os;
    t.print(os);
    std::istringstream is(os.str());
    for (std::string line; std::getline(is, line);) out << "  " << line << '\n';
  }
  return kExitOk;
}

void print_change(const Options& o, const Reply& r, const std::string& what, std::ostream& out) {
  if (o.json_out) {
    print_json(out, r.doc);
    return;
  }
  out << what;
  if (r.doc.is_object() && r.doc.contains("version"))
    out << " (list version " << integer(r.doc, "version") << ")";
  out << '\n';
}

int cmd_pin(const Options& o, Remote& remote, std::ostream& out) {
  need_positional(o, 2, "pin TOPIC KEY [--salts N] [--ttl DUR] --reason TEXT [--b64]");
  if (!o.reason || o.reason->empty())
    throw UsageError("pin needs --reason TEXT (it goes into the audit log)");
  const std::string key = key_arg(o, o.positional[1]);
  EncodedKey ek = encode_key(key);
  json body{{std::string(ek.field), ek.value}, {"reason", *o.reason}};
  if (o.salts) body["salts"] = parse_count("--salts", *o.salts, 1, 65536);
  if (o.ttl) body["ttl_s"] = parse_duration_s(*o.ttl);
  if (o.dry_run) {
    print_json(out, body);
    return kExitOk;
  }
  Reply r = remote.call("POST", topic_path(o.positional[0]) + "/pins", &body, true);
  print_change(o, r, "pinned " + printable_key(key) + " on " + o.positional[0], out);
  return kExitOk;
}

int cmd_unpin_allow(const Options& o, Remote& remote, std::ostream& out, bool unpin) {
  need_positional(o, 2, unpin ? "unpin TOPIC KEY [--b64]" : "allow TOPIC KEY [--b64]");
  const std::string key = key_arg(o, o.positional[1]);
  Reply r = remote.call(
      "DELETE", topic_path(o.positional[0]) + (unpin ? "/pins?" : "/denies?") + key_query(key),
      nullptr, true);
  print_change(o, r,
               (unpin ? "unpinned " : "allowed ") + printable_key(key) + " on " + o.positional[0],
               out);
  return kExitOk;
}

int cmd_deny(const Options& o, Remote& remote, std::ostream& out) {
  need_positional(o, 2, "deny TOPIC KEY --reason TEXT [--b64]");
  if (!o.reason || o.reason->empty())
    throw UsageError("deny needs --reason TEXT (it goes into the audit log)");
  const std::string key = key_arg(o, o.positional[1]);
  EncodedKey ek = encode_key(key);
  json body{{std::string(ek.field), ek.value}, {"reason", *o.reason}};
  Reply r = remote.call("POST", topic_path(o.positional[0]) + "/denies", &body, true);
  print_change(o, r, "denied " + printable_key(key) + " on " + o.positional[0] + " (never salted)",
               out);
  return kExitOk;
}

int cmd_audit(const Options& o, Remote& remote, std::ostream& out) {
  need_positional(o, 0, "audit [--limit N] [--topic T] [--json]");
  uint64_t limit = o.limit ? parse_count("--limit", *o.limit, 1, 100000) : 50;
  Reply r = remote.call("GET", "/v1/audit?limit=" + std::to_string(limit));
  json entries = json::array();
  for (const json& e : array_field(r.doc, "entries")) {
    if (!o.topic || str(e, "topic") == *o.topic) entries.push_back(e);
  }
  if (o.json_out) {
    print_json(out, json{{"entries", entries}});
    return kExitOk;
  }
  Table t({"TIME", "WHO", "ACTION", "TOPIC", "KEY", "VERSION", "DETAIL"},
          {false, false, false, false, false, true, false});
  for (const json& e : entries) {
    std::string detail;
    if (auto it = e.find("detail"); it != e.end()) {
      detail = it->is_string() ? it->get<std::string>()
                               : it->dump(-1, ' ', false, json::error_handler_t::replace);
    }
    t.add({utc_time(static_cast<int64_t>(num(e, "at_ms"))), str(e, "who"), str(e, "action"),
           str(e, "topic"), printable_key(json_key(e)), integer(e, "version"), detail});
  }
  t.print(out);
  return kExitOk;
}

// Pins and denies of every topic (or --topic T) as one JSON document.
int cmd_export(const Options& o, Remote& remote, std::ostream& out) {
  need_positional(o, 0, "export [--topic T] [--out FILE]");
  std::vector<std::string> topics;
  if (o.topic) {
    topics.push_back(*o.topic);
  } else {
    Reply r = remote.call("GET", "/v1/topics");
    for (const json& tp : array_field(r.doc, "topics")) topics.push_back(str(tp, "topic"));
  }
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  json doc{{"format", kExportFormat}, {"exported_at_ms", now_ms}, {"source", remote.url()}};
  json out_topics = json::array();
  size_t n_pins = 0, n_denies = 0;
  for (const std::string& topic : topics) {
    Reply pins = remote.call("GET", topic_path(topic) + "/pins", nullptr, true);
    Reply denies = remote.call("GET", topic_path(topic) + "/denies", nullptr, true);
    json tp{{"topic", topic}, {"pins", json::array()}, {"denies", json::array()}};
    for (const json& p : array_field(pins.doc, "pins")) {
      EncodedKey ek = encode_key(json_key(p));
      json e{{std::string(ek.field), ek.value}, {"reason", str(p, "reason")}};
      if (num(p, "salts") > 0) e["salts"] = p["salts"];
      double exp = num(p, "expires_at_ms");
      if (exp > 0) {
        // Carried as time left, so the pin keeps its deadline wherever it is imported.
        double left_s = std::ceil((exp - static_cast<double>(now_ms)) / 1000.0);
        if (left_s <= 0) continue;
        e["ttl_s"] = static_cast<int64_t>(left_s);
      }
      if (p.contains("by")) e["by"] = p["by"];
      tp["pins"].push_back(std::move(e));
      ++n_pins;
    }
    for (const json& d : array_field(denies.doc, "denies")) {
      EncodedKey ek = encode_key(json_key(d));
      json e{{std::string(ek.field), ek.value}, {"reason", str(d, "reason")}};
      if (d.contains("by")) e["by"] = d["by"];
      tp["denies"].push_back(std::move(e));
      ++n_denies;
    }
    if (!tp["pins"].empty() || !tp["denies"].empty() || o.topic)
      out_topics.push_back(std::move(tp));
  }
  doc["topics"] = std::move(out_topics);
  const std::string text = doc.dump(2, ' ', false, json::error_handler_t::strict) + "\n";
  if (o.out && *o.out != "-") {
    std::ofstream f(*o.out, std::ios::binary | std::ios::trunc);
    if (!(f << text) || !f.flush()) {
      throw CallFailure{kExitFailed, "cannot write '" + *o.out + "'"};
    }
    std::cerr << "exported " << n_pins << " pins and " << n_denies << " denies to " << *o.out
              << '\n';
  } else {
    out << text;
  }
  return kExitOk;
}

int cmd_import(const Options& o, Remote& remote, std::ostream& out) {
  need_positional(o, 1, "import FILE|- [--dry-run]");
  std::string text;
  if (o.positional[0] == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), {});
  } else {
    std::ifstream f(o.positional[0], std::ios::binary);
    if (!f) throw UsageError("cannot read '" + o.positional[0] + "'");
    text.assign(std::istreambuf_iterator<char>(f), {});
  }
  json doc = json::parse(text, nullptr, false);
  auto bad = [&](const std::string& why) {
    return UsageError("'" + o.positional[0] + "' is not a hotkeyctl export: " + why);
  };
  if (doc.is_discarded() || !doc.is_object()) throw bad("not a JSON object");
  if (str(doc, "format") != kExportFormat)
    throw bad(std::string("format must be \"") + kExportFormat + "\"");
  const json& topics = array_field(doc, "topics");
  // Check the whole document before sending anything: no half-applied imports from typos.
  struct Op {
    std::string topic, what, path, label;
    json body;
  };
  std::vector<Op> ops;
  for (size_t i = 0; i < topics.size(); ++i) {
    const json& tp = topics[i];
    const std::string where = "topics[" + std::to_string(i) + "]";
    std::string topic = str(tp, "topic");
    if (topic.empty()) throw bad(where + ".topic is missing");
    for (const char* kind : {"denies", "pins"}) {
      const json& items = array_field(tp, kind);
      for (size_t j = 0; j < items.size(); ++j) {
        const json& it = items[j];
        const std::string at = where + "." + kind + "[" + std::to_string(j) + "]";
        if (!it.is_object() || (!it.contains("key") && !it.contains("key_b64")))
          throw bad(at + " has no key");
        std::string key = json_key(it);
        if (key.empty()) throw bad(at + " has an empty or invalid key");
        EncodedKey ek = encode_key(key);
        json body{{std::string(ek.field), ek.value}, {"reason", str(it, "reason", "imported")}};
        if (body["reason"].get<std::string>().empty()) body["reason"] = "imported";
        const bool pin = std::string(kind) == "pins";
        if (pin) {
          if (it.contains("salts")) {
            if (!it["salts"].is_number_unsigned()) throw bad(at + ".salts must be a whole number");
            body["salts"] = it["salts"];
          }
          if (it.contains("ttl_s")) {
            if (!it["ttl_s"].is_number_integer() || it["ttl_s"].get<int64_t>() <= 0) {
              throw bad(at + ".ttl_s must be a positive whole number");
            }
            body["ttl_s"] = it["ttl_s"];
          }
        }
        ops.push_back({topic, pin ? "pin" : "deny", topic_path(topic) + (pin ? "/pins" : "/denies"),
                       printable_key(key), std::move(body)});
      }
    }
  }
  size_t done = 0;
  for (const Op& op : ops) {
    if (o.dry_run) {
      out << "would " << op.what << ' ' << op.label << " on " << op.topic << '\n';
      continue;
    }
    try {
      remote.call("POST", op.path, &op.body, true);
    } catch (CallFailure& f) {
      f.message = std::to_string(done) + " of " + std::to_string(ops.size()) +
                  " changes applied; stopped at " + op.what + " " + op.label + " on " + op.topic +
                  ": " + f.message;
      throw;
    }
    ++done;
    if (!o.json_out)
      out << (op.what == "pin" ? "pinned " : "denied ") << op.label << " on " << op.topic << '\n';
  }
  if (o.json_out) {
    print_json(out, json{{"applied", done}, {"planned", ops.size()}, {"dry_run", o.dry_run}});
  } else {
    out << (o.dry_run ? "dry run: " : "") << (o.dry_run ? ops.size() : done) << " changes"
        << (o.dry_run ? " would be applied" : " applied") << '\n';
  }
  return kExitOk;
}

}  // namespace

const std::vector<std::string_view>& remote_command_names() {
  static const std::vector<std::string_view> names = {"list", "top",   "show",  "pin",    "unpin",
                                                      "deny", "allow", "audit", "export", "import"};
  return names;
}

std::string remote_usage() {
  return "remote commands (against a running coordinator):\n"
         "  hotkeyctl list                                   topics: rate, skew, hot keys, "
         "version\n"
         "  hotkeyctl top TOPIC [-n N]                       fleet-wide top keys of a topic\n"
         "  hotkeyctl show TOPIC KEY                         one key: state, traffic, salts, "
         "pin/deny\n"
         "  hotkeyctl pin TOPIC KEY [--salts N] [--ttl DUR] --reason TEXT\n"
         "  hotkeyctl unpin TOPIC KEY\n"
         "  hotkeyctl deny TOPIC KEY --reason TEXT           never salt (ordering-critical key)\n"
         "  hotkeyctl allow TOPIC KEY\n"
         "  hotkeyctl audit [--limit N] [--topic T]          who changed what, newest first\n"
         "  hotkeyctl export [--topic T] [--out FILE]        pins and denies as JSON\n"
         "  hotkeyctl import FILE|- [--dry-run]              apply an export\n"
         "  options: --url URL (env HOTKEY_URL, default " +
         std::string(kDefaultUrl) +
         "), --token TOKEN (env HOTKEY_TOKEN),\n"
         "           --json, --b64 (KEY is base64), --timeout SECONDS (default 10)\n"
         "  exit codes: 0 ok, 1 refused, 2 usage, 3 unreachable, 4 auth, 5 unknown topic/key\n";
}

int run_remote_command(std::string_view command, const std::vector<std::string>& args,
                       std::ostream& out, std::ostream& err) {
  try {
    Options o = parse_options(args);
    if (o.help) {
      out << remote_usage();
      return kExitOk;
    }
    Remote remote(o);
    if (command == "list") return cmd_list(o, remote, out);
    if (command == "top") return cmd_top(o, remote, out);
    if (command == "show") return cmd_show(o, remote, out);
    if (command == "pin") return cmd_pin(o, remote, out);
    if (command == "unpin") return cmd_unpin_allow(o, remote, out, true);
    if (command == "deny") return cmd_deny(o, remote, out);
    if (command == "allow") return cmd_unpin_allow(o, remote, out, false);
    if (command == "audit") return cmd_audit(o, remote, out);
    if (command == "export") return cmd_export(o, remote, out);
    if (command == "import") return cmd_import(o, remote, out);
    throw UsageError("unknown remote command '" + std::string(command) + "'");
  } catch (const UsageError& e) {
    err << "hotkeyctl " << command << ": " << e.what() << "\n(hotkeyctl " << command
        << " --help for usage)\n";
    return kExitUsage;
  } catch (const CallFailure& f) {
    err << "hotkeyctl " << command << ": " << f.message << '\n';
    return f.code;
  }
}

}  // namespace hotkey::ctl
