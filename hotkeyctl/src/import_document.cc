#include "import_document.h"

#include <algorithm>

#include "command.h"
#include "hotkey/key_codec.h"
#include "hotkey/report.h"

namespace hotkeyctl {
namespace {

using nlohmann::json;

std::string string_member(const json& j, const char* name) {
  if (!j.is_object()) return "";
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& array_member(const json& j, const char* name) {
  static const json empty = json::array();
  if (!j.is_object()) return empty;
  auto it = j.find(name);
  return it != j.end() && it->is_array() ? *it : empty;
}

// "key_b64" wins over "key"; "" when neither is usable.
std::string key_member(const json& j) {
  if (!j.is_object()) return "";
  if (auto it = j.find("key_b64"); it != j.end() && it->is_string()) {
    return hotkey::base64_decode(it->get<std::string>()).value_or("");
  }
  return string_member(j, "key");
}

// The largest values any coordinator accepts (max_partitions' ceiling, 10 years of TTL); the
// target refuses anything beyond its own limits with a message.
constexpr uint64_t kMaxImportSalts = 100000;
constexpr int64_t kMaxImportTtlS = int64_t{10} * 365 * 86400;
constexpr uint64_t kMaxExpiresAtMs = uint64_t{1} << 53;

}  // namespace

std::vector<ImportOp> parse_import_document(std::string_view text, const std::string& source,
                                            int64_t now_ms) {
  const json doc = json::parse(text, nullptr, false);
  auto bad = [&](const std::string& why) {
    return UsageError("'" + source + "' is not a hotkeyctl export: " + why);
  };
  if (doc.is_discarded() || !doc.is_object()) throw bad("not a JSON object");
  if (string_member(doc, "format") != kExportFormat) {
    throw bad(std::string("\"format\" must be \"") + kExportFormat + "\"");
  }
  std::vector<ImportOp> ops;
  // A topic's policies: {key|key_b64 (the prefix), never_salt?, hot_fraction?, max_salts?,
  // reason}.
  auto add_policies = [&](const json& tp, const std::string& where) {
    const std::string topic = string_member(tp, "topic");
    const json& policies = array_member(tp, "policies");
    for (size_t j = 0; j < policies.size(); ++j) {
      const json& it = policies[j];
      const std::string at = where + ".policies[" + std::to_string(j) + "]";
      if (!it.is_object()) throw bad(at + " is not an object");
      const std::string prefix = key_member(it);
      if (prefix.empty()) throw bad(at + " has no prefix (key), or an empty or invalid one");
      const hotkey::EncodedKey ek = hotkey::encode_key(prefix);
      std::string reason = string_member(it, "reason");
      if (reason.empty()) reason = "imported";
      json body{{std::string(ek.field), ek.value}, {"reason", reason}};
      const bool never = it.contains("never_salt") && it["never_salt"] == true;
      if (it.contains("never_salt") && !it["never_salt"].is_boolean()) {
        throw bad(at + ".never_salt must be true or false");
      }
      if (never) body["never_salt"] = true;
      if (it.contains("hot_fraction") && it["hot_fraction"] != 0) {
        const json& hf = it["hot_fraction"];
        if (!hf.is_number() || !(hf.get<double>() > 0) || hf.get<double>() > 1000) {
          throw bad(at + ".hot_fraction must be a number above 0 and at most 1000, got " +
                    hf.dump());
        }
        body["hot_fraction"] = hf;
      }
      if (it.contains("max_salts") && it["max_salts"] != 0) {
        const json& ms = it["max_salts"];
        if (!ms.is_number_unsigned() || ms.get<uint64_t>() > kMaxImportSalts) {
          throw bad(at + ".max_salts must be a whole number from 1 to the partition count, got " +
                    ms.dump());
        }
        body["max_salts"] = ms;
      }
      const bool tuned = body.contains("hot_fraction") || body.contains("max_salts");
      if (never == tuned) {
        throw bad(at + (never ? " is never_salt and also has hot_fraction or max_salts"
                              : " needs never_salt true, or hot_fraction and/or max_salts"));
      }
      ops.push_back(ImportOp{topic, "policy", prefix, hotkey::printable_key(prefix),
                             std::move(body), 0, false});
    }
  };
  const json& topics = array_member(doc, "topics");
  for (size_t i = 0; i < topics.size(); ++i) {
    const json& tp = topics[i];
    const std::string where = "topics[" + std::to_string(i) + "]";
    const std::string topic = string_member(tp, "topic");
    if (!hotkey::valid_topic_name(topic)) throw bad(where + ".topic is not a valid topic name");
    // Denies, then policies, then pins.
    for (const char* kind : {"denies", "policies", "pins"}) {
      if (std::string_view(kind) == "policies") {
        add_policies(tp, where);
        continue;
      }
      const bool pin = std::string_view(kind) == "pins";
      const json& items = array_member(tp, kind);
      for (size_t j = 0; j < items.size(); ++j) {
        const json& it = items[j];
        const std::string at = where + "." + kind + "[" + std::to_string(j) + "]";
        if (!it.is_object()) throw bad(at + " is not an object");
        const std::string key = key_member(it);
        if (key.empty()) throw bad(at + " has no key, or an empty or invalid one");
        const hotkey::EncodedKey ek = hotkey::encode_key(key);
        std::string reason = string_member(it, "reason");
        if (reason.empty()) reason = "imported";
        json body{{std::string(ek.field), ek.value}, {"reason", reason}};
        ImportOp op{topic, pin ? "pin" : "deny", key, hotkey::printable_key(key), json(), 0, false};
        if (pin && it.contains("salts")) {
          const json& salts = it["salts"];
          if (!salts.is_number_unsigned() || salts.get<uint64_t>() < 1 ||
              salts.get<uint64_t>() > kMaxImportSalts) {
            throw bad(at + ".salts must be a whole number from 1 to the topic's partition count, " +
                      "got " + salts.dump());
          }
          body["salts"] = salts;
        }
        if (pin && it.contains("expires_at_ms")) {
          // Exports carry the absolute deadline; "ttl_s" next to it is only for older readers.
          const json& exp = it["expires_at_ms"];
          if (!exp.is_number_unsigned() || exp.get<uint64_t>() == 0 ||
              exp.get<uint64_t>() > kMaxExpiresAtMs) {
            throw bad(at + ".expires_at_ms must be a positive whole number of milliseconds " +
                      "since the epoch, got " + exp.dump());
          }
          op.expires_at_ms = static_cast<int64_t>(exp.get<uint64_t>());
        } else if (pin && it.contains("ttl_s")) {
          const json& ttl = it["ttl_s"];
          if (!ttl.is_number_unsigned() || ttl.get<uint64_t>() == 0 ||
              ttl.get<uint64_t>() > kMaxImportTtlS) {
            throw bad(at + ".ttl_s must be a whole number of seconds from 1 to 10 years, got " +
                      ttl.dump());
          }
          op.expires_at_ms = now_ms + static_cast<int64_t>(ttl.get<uint64_t>()) * 1000;
        }
        if (op.expires_at_ms > 0) {
          // Whole seconds, rounded up, so the pin ends no earlier than the export said.
          const int64_t left_ms = op.expires_at_ms - now_ms;
          op.expired = left_ms <= 0;
          if (!op.expired)
            body["ttl_s"] = std::min<int64_t>((left_ms + 999) / 1000, kMaxImportTtlS);
        }
        op.body = std::move(body);
        ops.push_back(std::move(op));
      }
    }
  }
  return ops;
}

}  // namespace hotkeyctl
