#include "remote_client.h"

#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>

#include "hotkey/key_codec.h"
#include "hotkey/report.h"

namespace hotkeyctl {
namespace {

using hotkey::encode_key;
using hotkey::EncodedKey;
using nlohmann::json;

constexpr const char* kDefaultUrl = "http://127.0.0.1:8470";

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
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
}  // namespace

std::vector<FlagSpec> spec_with(std::initializer_list<FlagSpec> own) {
  std::vector<FlagSpec> spec = {
      {"url", true}, {"token", true}, {"json", false}, {"timeout", true}, {"cacert", true}};
  spec.insert(spec.end(), own.begin(), own.end());
  return spec;
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

std::string reason_flag(const Flags& flags, const char* command) {
  auto reason = flags.value("reason");
  if (!reason || reason->empty()) {
    throw UsageError(std::string(command) + " needs --reason TEXT (it goes into the audit log)");
  }
  return *reason;
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

Remote::Remote(const Flags& flags)
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
    throw UsageError("--url must look like " + scheme + "://HOST[:PORT][/PREFIX] with a port in " +
                     "1-65535, got '" + url_ + "'");
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

Remote::~Remote() = default;

Reply Remote::call(const std::string& method, const std::string& path, const json* body,
                   bool operator_call) {
  if (operator_call && token_.empty()) {
    throw CallFailure{kExitAuth,
                      "this command needs the operator token: pass --token TOKEN or set "
                      "HOTKEY_TOKEN"};
  }
  httplib::Headers headers = {{"Accept", "application/json"}};
  if (!token_.empty()) headers.emplace("Authorization", "Bearer " + token_);
  const std::string full = prefix_ + path;
  const std::string payload = body ? body->dump(-1, ' ', false, json::error_handler_t::strict) : "";
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
      throw CallFailure{kExitFailure, method + " " + path + ": HTTP " + std::to_string(r.status) +
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

}  // namespace hotkeyctl
