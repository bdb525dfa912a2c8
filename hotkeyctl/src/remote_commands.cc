#include "remote_commands.h"

#include <httplib.h>
#include <unistd.h>

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
#include <span>
#include <sstream>
#include <stdexcept>

#include "flags.h"
#include "hotkey/key_codec.h"
#include "hotkey/report.h"
#include "import_document.h"

namespace hotkeyctl {
namespace {

using hotkey::base64_decode;
using hotkey::encode_key;
using hotkey::EncodedKey;
using hotkey::printable_key;
using nlohmann::json;

constexpr const char* kDefaultUrl = "http://127.0.0.1:8470";

// A failed call that already knows its exit code and message.
struct CallFailure {
  int code;
  std::string message;
};

// ---------------------------------------------------------------- command line

// Flags every remote command takes, followed by the command's own.
std::vector<FlagSpec> spec_with(std::initializer_list<FlagSpec> own) {
  std::vector<FlagSpec> spec = {
      {"url", true}, {"token", true}, {"json", false}, {"timeout", true}, {"cacert", true}};
  spec.insert(spec.end(), own.begin(), own.end());
  return spec;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// "90s", "30m", "2h", "1d", "1w" or plain seconds.
int64_t parse_duration_s(const std::string& text) {
  static const std::map<char, int64_t> units = {
      {'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 604800}};
  std::string digits = text;
  int64_t unit = 1;
  if (!text.empty() && units.count(text.back())) {
    unit = units.at(text.back());
    digits.pop_back();
  }
  const bool numeric =
      !digits.empty() && digits.size() <= 9 &&
      std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!numeric) throw UsageError("--ttl must look like 90s, 30m, 2h, 1d or 1w, got '" + text + "'");
  const int64_t s = std::stoll(digits) * unit;
  if (s < 1 || s > int64_t{10} * 365 * 86400) {
    throw UsageError("--ttl must be between 1s and 10 years, got '" + text + "'");
  }
  return s;
}

// The one KEY argument's bytes (--b64: the argument is base64).
std::string key_of(const Flags& flags, const std::string& arg) {
  std::string key = key_arg(arg, flags.has("b64"));
  if (key.empty()) throw UsageError("KEY must not be empty");
  return key;
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

// A topic argument must be a Kafka topic name: anything else is the user's mistake (exit 2),
// not an endpoint the coordinator lacks.
std::string topic_path(const std::string& topic) {
  if (!hotkey::valid_topic_name(topic)) {
    throw UsageError("'" + topic +
                     "' is not a Kafka topic name ([A-Za-z0-9._-], 1-249 characters)");
  }
  return "/v1/topics/" + percent_encode(topic);
}

// --url's authority: HOST, HOST:PORT or [IPv6]:PORT, with a port in 1-65535.
bool valid_authority(const std::string& a) {
  std::string host = a;
  std::string port;
  if (!a.empty() && a.front() == '[') {
    const size_t close = a.find(']');
    if (close == std::string::npos || close == 1) return false;
    host = a.substr(1, close - 1);
    if (close + 1 < a.size()) {
      if (a[close + 1] != ':') return false;
      port = a.substr(close + 2);
      if (port.empty()) return false;
    }
    for (char c : host) {
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return false;
    }
  } else {
    const size_t colon = a.rfind(':');
    if (colon != std::string::npos) {
      host = a.substr(0, colon);
      port = a.substr(colon + 1);
      if (port.empty()) return false;
    }
    if (host.empty()) return false;
    for (char c : host) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') {
        return false;
      }
    }
  }
  if (!port.empty()) {
    if (port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
    const int n = std::stoi(port);
    if (n < 1 || n > 65535) return false;
  }
  return true;
}

std::string transport_error(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "connection refused or host unreachable";
    case httplib::Error::ConnectionTimeout:
      return "connection timed out";
    case httplib::Error::Read:
      return "no answer (timed out or connection closed)";
    case httplib::Error::Write:
      return "could not send the request";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed";
    case httplib::Error::SSLServerVerification:
      return "TLS certificate not trusted: pass the coordinator's CA with --cacert FILE or "
             "HOTKEY_CACERT";
    case httplib::Error::SSLLoadingCerts:
      return "cannot load the CA certificates (--cacert)";
    default:
      return httplib::to_string(e);
  }
}

struct Reply {
  int status = 0;
  std::string body;
  json doc;  // null when the body is not JSON
};

// One coordinator, reached over HTTP(S) at --url. Not thread-safe (one command at a time).
class Remote {
 public:
  explicit Remote(const Flags& flags)
      : url_(flags.value("url").value_or(env_or("HOTKEY_URL", kDefaultUrl))),
        token_(flags.value("token").value_or(env_or("HOTKEY_TOKEN", ""))) {
    const double timeout_s = flags.number("timeout", 0, 3600, 10);
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
    if (!valid_authority(origin.substr(scheme_end + 3))) {
      throw UsageError("--url must look like " + scheme +
                       "://HOST[:PORT][/PREFIX] with a port in " + "1-65535, got '" + url_ + "'");
    }
    if (path_start != std::string::npos) prefix_ = url_.substr(path_start);
    while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
    client_ = std::make_unique<httplib::Client>(origin);
    // The server certificate is always verified; --cacert only changes the trust anchors.
    const std::string cacert = flags.value("cacert").value_or(env_or("HOTKEY_CACERT", ""));
    if (!cacert.empty()) {
      if (scheme != "https") throw UsageError("--cacert needs an https:// --url");
      if (access(cacert.c_str(), R_OK) != 0) {
        throw UsageError("--cacert: cannot read '" + cacert + "'");
      }
      client_->set_ca_cert_path(cacert);
    }
    auto secs = static_cast<time_t>(timeout_s);
    auto usecs = static_cast<time_t>((timeout_s - static_cast<double>(secs)) * 1e6);
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
                                              transport_error(res.error()) +
                                              "); is it running? Set --url or HOTKEY_URL"};
    }
    Reply r{res->status, res->body, json()};
    r.doc = json::parse(r.body, nullptr, false);
    if (r.doc.is_discarded()) r.doc = json();
    if (r.status < 300) {
      // Every coordinator answer is a JSON object: anything else (a proxy's HTML page, a
      // different service on that port) must not pass for success or an empty table.
      if (!r.doc.is_object()) {
        std::string shown = r.body.substr(0, 200);
        for (char& c : shown) {
          if (static_cast<unsigned char>(c) < 0x20) c = ' ';
        }
        throw CallFailure{kExitFailure,
                          method + " " + path + ": HTTP " + std::to_string(r.status) +
                              " but the answer is not a JSON object (is --url a hotkey "
                              "coordinator?): '" +
                              shown + (r.body.size() > 200 ? "...'" : "'")};
      }
      return r;
    }
    std::string msg;
    if (r.doc.is_object() && r.doc.contains("error") && r.doc["error"].is_string()) {
      msg = r.doc["error"].get<std::string>();
    } else {
      msg = r.body.substr(0, 300);
    }
    // The coordinator's machine-readable reason (too_many_pins, not_found...) goes with it.
    std::string reason;
    if (r.doc.is_object() && r.doc.contains("reason") && r.doc["reason"].is_string()) {
      reason = " " + r.doc["reason"].get<std::string>();
    }
    std::string what =
        method + " " + path + ": HTTP " + std::to_string(r.status) + reason + ": " + msg;
    if (r.status == 401 || r.status == 403) {
      throw CallFailure{kExitAuth, what + (token_.empty() ? " (pass --token or set HOTKEY_TOKEN)"
                                                          : " (check --token / HOTKEY_TOKEN)")};
    }
    if (r.status == 404) throw CallFailure{kExitNotFound, what};
    throw CallFailure{kExitFailure, what};
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

void need_positional(const Flags& flags, size_t n, const char* usage) {
  if (flags.positional().size() == n) return;
  for (const std::string& p : flags.positional()) {
    if (p.size() > 2 && p.rfind("--", 0) == 0) {
      throw UsageError(std::string("usage: hotkeyctl ") + usage + " ('" + p +
                       "' came after '--', where everything is an argument: put flags before "
                       "'--', e.g. hotkeyctl pin TOPIC --reason TEXT -- -KEY)");
    }
  }
  throw UsageError(std::string("usage: hotkeyctl ") + usage);
}

// Parses the flags, reaches the coordinator and runs `body`; maps call failures onto the
// documented exit codes (usage errors go up to main, which prints them with exit code 2).
template <typename Body>
int remote_main(std::string_view name, std::span<const std::string> args, Io io,
                std::initializer_list<FlagSpec> own, Body body) {
  const std::vector<FlagSpec> spec = spec_with(own);
  Flags flags = Flags::parse(args, spec);
  Remote remote(flags);
  try {
    return body(flags, remote, io.out);
  } catch (const CallFailure& f) {
    io.err << "hotkeyctl " << name << ": " << f.message << '\n';
    return f.code;
  }
}

// ---------------------------------------------------------------- commands

int cmd_list(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 0, "list [--json]");
  Reply r = remote.call("GET", "/v1/topics");
  if (flags.has("json")) {
    print_json(out, r.doc);
    return kExitOk;
  }
  Table t({"TOPIC", "PARTITIONS", "RATE/S", "SKEW", "PREDICTED", "IDLE", "PRODUCERS", "HOT", "PINS",
           "DENIES", "VERSION"},
          {false, true, true, true, true, true, true, true, true, true, true});
  for (const json& tp : array_field(r.doc, "topics")) {
    const double skew = num(tp, "skew", 0);
    t.add({str(tp, "topic"), integer(tp, "partitions"), fixed(num(tp, "rate"), 1),
           fixed(skew, 2) + (skew > 2.0 ? "!" : ""), fixed(num(tp, "predicted_skew", skew), 2),
           pct(num(tp, "idle_partitions_ratio")), integer(tp, "producers"), integer(tp, "hot_keys"),
           integer(tp, "pins"), integer(tp, "denies"), integer(tp, "version")});
  }
  t.print(out);
  return kExitOk;
}

std::string key_state(const json& e) {
  std::string s;
  if (flag(e, "pinned")) {
    s = "pinned";
  } else if (flag(e, "hot")) {
    s = "hot";
  }
  if (flag(e, "denied")) s += s.empty() ? "denied" : ",denied";
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
  for (const json& e : array_field(r.doc, "items")) {
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

int cmd_show(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 2, "show TOPIC KEY [--b64] [--json]");
  const std::string& topic = flags.positional()[0];
  const std::string key = key_of(flags, flags.positional()[1]);
  // The summary carries the topic's pins and denies (with reasons); 404 for unknown topics.
  Reply summary = remote.call("GET", topic_path(topic));
  Reply top = remote.call("GET", topic_path(topic) + "/top?n=1000");
  Reply list = remote.call("GET", "/v1/hotkeys?topic=" + percent_encode(topic));
  const json* top_entry = find_key(array_field(top.doc, "items"), key);
  const json* listed = find_key(array_field(list.doc, "keys"), key);
  const json* pin = find_key(array_field(summary.doc, "pinned"), key);
  const json* deny = find_key(array_field(summary.doc, "denied"), key);

  if (flags.has("json")) {
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
      << " partitions, hash " << str(summary.doc, "hash", "?") << ", list version "
      << integer(list.doc, "version") << ")\n";
  out << "key        " << printable_key(key) << '\n';
  std::string state;
  if (deny) {
    state = "denied: never salted";
  } else if (listed) {
    state = str(*listed, "source", "detected") == "pinned" ? "salted (pinned)"
                                                           : "salted (detected hot)";
  } else if (pin) {
    state = "pinned (not salted yet)";
  } else {
    state = top_entry && flag(*top_entry, "hot") ? "hot (not salted yet)" : "not salted";
  }
  out << "state      " << state << '\n';
  if (top_entry) {
    out << "traffic    " << fixed(num(*top_entry, "rate"), 1) << " msg/s, "
        << pct(num(*top_entry, "share")) << " of the topic (count " << integer(*top_entry, "count")
        << ", error bound " << integer(*top_entry, "error") << ")";
    if (num(*top_entry, "partition", -1) >= 0) {
      out << ", home partition " << integer(*top_entry, "partition");
    }
    out << '\n';
  } else {
    out << "traffic    not among the fleet-wide top 1000 keys\n";
  }
  if (pin) {
    out << "pin        by " << str(*pin, "by", "?") << ": " << str(*pin, "reason");
    if (num(*pin, "salts") > 0) out << "; " << integer(*pin, "salts") << " salts";
    const double exp = num(*pin, "expires_at_ms");
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

void print_change(const Flags& flags, const Reply& r, const std::string& what, std::ostream& out) {
  if (flags.has("json")) {
    print_json(out, r.doc);
    return;
  }
  out << what;
  if (num(r.doc, "version") > 0) {
    out << " (list version " << integer(r.doc, "version") << ")";
  } else {
    // The coordinator keeps the decision; a list is published once producers report.
    out << " (no list yet: applies once the topic has reports)";
  }
  out << '\n';
}

std::string reason_flag(const Flags& flags, const char* command) {
  auto reason = flags.value("reason");
  if (!reason || reason->empty()) {
    throw UsageError(std::string(command) + " needs --reason TEXT (it goes into the audit log)");
  }
  return *reason;
}

int cmd_pin(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 2, "pin TOPIC KEY [--salts N] [--ttl DUR] --reason TEXT [--b64]");
  const std::string reason = reason_flag(flags, "pin");
  const std::string& topic = flags.positional()[0];
  const std::string key = key_of(flags, flags.positional()[1]);
  EncodedKey ek = encode_key(key);
  json body{{std::string(ek.field), ek.value}, {"reason", reason}};
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
  EncodedKey ek = encode_key(key);
  json body{{std::string(ek.field), ek.value}, {"reason", reason}};
  Reply r = remote.call("POST", topic_path(topic) + "/denies", &body, true);
  print_change(flags, r, "denied " + printable_key(key) + " on " + topic + " (never salted)", out);
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
        << integer(r.doc, "version") << " if it returns)\n";
  }
  return kExitOk;
}

int cmd_audit(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 0, "audit [--limit N] [--topic T] [--json]");
  const int64_t limit = flags.integer("limit", 1, 100000, 50);
  const auto topic = flags.value("topic");
  Reply r = remote.call("GET", "/v1/audit?limit=" + std::to_string(limit), nullptr, true);
  json entries = json::array();
  for (const json& e : array_field(r.doc, "entries")) {
    if (!topic || str(e, "topic") == *topic) entries.push_back(e);
  }
  if (flags.has("json")) {
    print_json(out, json{{"entries", entries}});
    return kExitOk;
  }
  Table t({"TIME", "WHO", "ACTION", "TOPIC", "KEY", "VERSION", "DETAIL"},
          {false, false, false, false, false, true, false});
  for (const json& e : entries) {
    std::string detail;
    if (auto it = e.find("detail"); it != e.end() && !(it->is_object() && it->empty())) {
      detail = it->is_string() ? it->get<std::string>()
                               : it->dump(-1, ' ', false, json::error_handler_t::replace);
    }
    t.add({utc_time(static_cast<int64_t>(num(e, "at_ms"))), str(e, "who"), str(e, "action"),
           str(e, "topic"), printable_key(json_key(e)), integer(e, "version"), detail});
  }
  t.print(out);
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
  if (str(r.doc, "mode") != "cluster") {
    out << "single-node mode (the coordinator was started without --kafka)\n";
    return kExitOk;
  }
  out << "member " << str(r.doc, "url") << " (" << str(r.doc, "member_id") << "), group "
      << str(r.doc, "group") << ", generation " << integer(r.doc, "generation") << "\n";
  out << "members:";
  if (auto it = r.doc.find("members"); it != r.doc.end() && it->is_array()) {
    for (const json& m : *it) out << " " << (m.is_string() ? m.get<std::string>() : m.dump());
  }
  out << "\n";
  Table t({"TOPIC", "OWNER"}, {false, false});
  if (auto it = r.doc.find("owners"); it != r.doc.end() && it->is_object()) {
    for (const auto& [topic, owner] : it->items()) {
      t.add({topic, owner.is_string() ? owner.get<std::string>() : owner.dump()});
    }
  }
  t.print(out);
  return kExitOk;
}

// Pins and denies of every topic (or --topic T) as one JSON document.
int cmd_export(const Flags& flags, Remote& remote, std::ostream& out) {
  need_positional(flags, 0, "export [--topic T] [--out FILE]");
  const auto only = flags.value("topic");
  std::vector<std::string> topics;
  if (only) {
    topics.push_back(*only);
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
    Reply summary = remote.call("GET", topic_path(topic));
    json tp{{"topic", topic}, {"pins", json::array()}, {"denies", json::array()}};
    for (const json& p : array_field(summary.doc, "pinned")) {
      EncodedKey ek = encode_key(json_key(p));
      json e{{std::string(ek.field), ek.value}, {"reason", str(p, "reason")}};
      if (num(p, "salts") > 0) e["salts"] = p["salts"];
      const double exp = num(p, "expires_at_ms");
      if (exp > 0) {
        // The absolute deadline, so a pin re-imported later ends when it would have (or is
        // skipped once it has); ttl_s, the time left now, is for older importers.
        const double left_s = std::ceil((exp - static_cast<double>(now_ms)) / 1000.0);
        if (left_s <= 0) continue;
        e["expires_at_ms"] = static_cast<int64_t>(exp);
        e["ttl_s"] = static_cast<int64_t>(left_s);
      }
      if (p.contains("by")) e["by"] = p["by"];
      tp["pins"].push_back(std::move(e));
      ++n_pins;
    }
    for (const json& d : array_field(summary.doc, "denied")) {
      EncodedKey ek = encode_key(json_key(d));
      json e{{std::string(ek.field), ek.value}, {"reason", str(d, "reason")}};
      if (d.contains("by")) e["by"] = d["by"];
      tp["denies"].push_back(std::move(e));
      ++n_denies;
    }
    if (!tp["pins"].empty() || !tp["denies"].empty() || only) out_topics.push_back(std::move(tp));
  }
  doc["topics"] = std::move(out_topics);
  const std::string text = doc.dump(2, ' ', false, json::error_handler_t::strict) + "\n";
  const auto file = flags.value("out");
  if (file && *file != "-") {
    std::ofstream f(*file, std::ios::binary | std::ios::trunc);
    if (!(f << text) || !f.flush()) throw CallFailure{kExitFailure, "cannot write '" + *file + "'"};
    if (!flags.has("json")) {
      out << "exported " << n_pins << " pins and " << n_denies << " denies to " << *file << '\n';
    }
  } else {
    out << text;
  }
  return kExitOk;
}

// Whether `summary` (GET /v1/topics/{t}, null for an unknown topic) already holds what `op`
// would set: a deny with the same reason, or a pin with the same salts and reason ending
// within 2 s of the imported deadline (the pin call takes whole seconds).
bool already_in_place(const json& summary, const ImportOp& op) {
  if (!summary.is_object()) return false;
  const std::string reason = str(op.body, "reason");
  for (const json& e : array_field(summary, op.what == "pin" ? "pinned" : "denied")) {
    if (json_key(e) != op.key || str(e, "reason") != reason) continue;
    if (op.what == "deny") return true;
    if (num(e, "salts") != num(op.body, "salts")) return false;
    const double held_exp = num(e, "expires_at_ms");
    if (op.expires_at_ms == 0 || held_exp == 0) return op.expires_at_ms == 0 && held_exp == 0;
    return std::abs(held_exp - static_cast<double>(op.expires_at_ms)) <= 2000;
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
  std::map<std::string, json> held;
  size_t done = 0, skipped = 0;
  for (const ImportOp& op : ops) {
    std::string skip;
    if (op.expired) {
      skip = "its ttl ended at " + utc_time(op.expires_at_ms);
    } else {
      if (!held.count(op.topic)) {
        try {
          held[op.topic] = remote.call("GET", topic_path(op.topic)).doc;
        } catch (const CallFailure& f) {
          if (f.code != kExitNotFound) throw;
          held[op.topic] = json();
        }
      }
      if (already_in_place(held[op.topic], op)) skip = "already in place";
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
      const std::string path = topic_path(op.topic) + (op.what == "pin" ? "/pins" : "/denies");
      remote.call("POST", path, &op.body, true);
    } catch (CallFailure& f) {
      f.message = std::to_string(done) + " of " + std::to_string(ops.size()) +
                  " changes applied; stopped at " + op.what + " " + op.label + " on " + op.topic +
                  ": " + f.message;
      throw;
    }
    ++done;
    if (!flags.has("json")) {
      out << (op.what == "pin" ? "pinned " : "denied ") << op.label << " on " << op.topic << '\n';
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

int run_list(std::span<const std::string> args, Io io) {
  return remote_main("list", args, io, {}, cmd_list);
}
int run_top(std::span<const std::string> args, Io io) {
  return remote_main("top", args, io, {{"limit", true}}, cmd_top);
}
int run_show(std::span<const std::string> args, Io io) {
  return remote_main("show", args, io, {{"b64", false}}, cmd_show);
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
int run_delete_topic(std::span<const std::string> args, Io io) {
  return remote_main("delete-topic", args, io, {{"reason", true}}, cmd_delete_topic);
}
int run_audit(std::span<const std::string> args, Io io) {
  return remote_main("audit", args, io, {{"limit", true}, {"topic", true}}, cmd_audit);
}
int run_cluster(std::span<const std::string> args, Io io) {
  return remote_main("cluster", args, io, {}, cmd_cluster);
}
int run_export(std::span<const std::string> args, Io io) {
  return remote_main("export", args, io, {{"topic", true}, {"out", true}}, cmd_export);
}
int run_import(std::span<const std::string> args, Io io) {
  return remote_main("import", args, io, {{"dry-run", false}}, cmd_import);
}

#define HOTKEY_REMOTE_FLAGS                                                                  \
  "\n"                                                                                       \
  "  --url URL      coordinator address (env HOTKEY_URL, default http://127.0.0.1:8470)\n"   \
  "  --token TOKEN  operator token (env HOTKEY_TOKEN); needed to change or read the audit\n" \
  "                 (and for every read when the coordinator has a producer token)\n"        \
  "  --json         print the coordinator's JSON instead of a table\n"                       \
  "  --timeout S    seconds to wait for the coordinator (default 10)\n"                      \
  "  --cacert FILE  PEM CA certificate(s) to verify an https:// coordinator with\n"          \
  "                 (env HOTKEY_CACERT; default: the system trust store)\n"                  \
  "\n"                                                                                       \
  "Exit codes: 0 ok, 1 the coordinator refused, 2 usage, 3 coordinator unreachable,\n"       \
  "4 operator token missing or refused, 5 unknown topic or no such pin/deny.\n"

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

const Command kAuditCommand = {"audit",
                               "who pinned, unpinned, denied or allowed what, newest first",
                               "usage: hotkeyctl audit [--limit N] [--topic T] [--json]\n"
                               "\n"
                               "  --limit N      entries to fetch (default 50)\n"
                               "  --topic T      only this topic's entries\n" HOTKEY_REMOTE_FLAGS,
                               &run_audit};

const Command kClusterCommand = {
    "cluster", "cluster mode: members, generation and the owner of every topic",
    "usage: hotkeyctl cluster [--json] [--url URL]\n"
    "\n"
    "GET /v1/cluster of any member (docs/CLUSTER.md): this member, the members seen, and\n"
    "which member owns each topic (ask that one for top keys and loads).\n" HOTKEY_REMOTE_FLAGS,
    &run_cluster};

const Command kExportCommand = {
    "export", "pins and denies as JSON (to move them between environments)",
    "usage: hotkeyctl export [--topic T] [--out FILE]\n"
    "\n"
    "Writes {\"format\": \"hotkey-operator-state/1\", \"topics\": [{topic, pins: [{key|key_b64,\n"
    "reason, salts?, ttl_s?}], denies: [{key|key_b64, reason}]}]}. A pin's ttl_s is the time\n"
    "it has left. 'hotkeyctl import' applies such a file.\n"
    "\n"
    "  --topic T      only this topic (default: every topic)\n"
    "  --out FILE     write to FILE instead of standard output\n" HOTKEY_REMOTE_FLAGS,
    &run_export};

const Command kImportCommand = {
    "import", "apply an export's pins and denies (operator)",
    "usage: hotkeyctl import FILE|- [--dry-run]\n"
    "\n"
    "Checks the whole file first, then applies denies before pins, topic by topic; stops at\n"
    "the first refusal and says how many changes were applied.\n"
    "\n"
    "  --dry-run      print what would change, change nothing\n" HOTKEY_REMOTE_FLAGS,
    &run_import};

}  // namespace hotkeyctl
