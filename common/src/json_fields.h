// Private to hotkey::common: reading JSON documents field by field, so every decoder rejects
// bad input with a DecodeError that names the field path ("sketch.items[3].count: ...").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "hotkey/key_codec.h"
#include "hotkey/report.h"

namespace hotkey::json_fields {

using Json = nlohmann::json;

// Our documents are at most four levels deep; anything much deeper is abuse, rejected before
// it can cost stack or memory.
inline constexpr int kMaxDepth = 16;

[[noreturn]] inline void fail(const std::string& path, std::string_view why) {
  throw DecodeError(path + ": " + std::string(why));
}

inline std::string child(const std::string& parent, std::string_view name) {
  if (parent.empty()) return std::string(name);
  return parent + "." + std::string(name);
}

inline std::string index(const std::string& parent, size_t i) {
  return parent + "[" + std::to_string(i) + "]";
}

// The deepest nesting of [ and { outside string literals (an upper bound of what the parser
// will see; unbalanced or invalid text just gives some number).
inline int max_bracket_depth(std::string_view text) noexcept {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// Called for every parse event before the document is built (see nlohmann's parser callback);
// may throw DecodeError to stop parsing early. Depth is at most kMaxDepth.
using ParseWatch = std::function<void(int depth, Json::parse_event_t event, const Json& parsed)>;

// Parses `text` as one JSON object. `what` names the document in messages ("report").
inline Json parse_object(std::string_view text, std::string_view what,
                         const ParseWatch& watch = nullptr) {
  Json::parser_callback_t limit_depth = [what, &watch](int depth, Json::parse_event_t event,
                                                       Json& parsed) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= kMaxDepth) {
      throw DecodeError(std::string(what) + ": JSON nested deeper than " +
                        std::to_string(kMaxDepth) + " levels");
    }
    if (watch) watch(depth, event, parsed);
    return true;
  };
  Json doc;
  try {
    // The depth callback makes nlohmann use its slower callback parser; without a watch, a
    // document that a bracket scan shows shallow enough cannot trip it, so it goes through
    // the plain parser (same DOM, same errors). Anything deeper, or in doubt, or watched,
    // takes the checked path.
    if (!watch && max_bracket_depth(text) < kMaxDepth) {
      doc = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/true,
                        /*ignore_comments=*/false);
    } else {
      doc = Json::parse(text.begin(), text.end(), limit_depth, /*allow_exceptions=*/true,
                        /*ignore_comments=*/false);
    }
  } catch (const Json::exception& e) {
    // parse_error for syntax, out_of_range for numbers beyond a double (1e400).
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix: users need the position.
    std::string msg = e.what();
    if (auto pos = msg.find("] "); pos != std::string::npos) msg = msg.substr(pos + 2);
    throw DecodeError(std::string(what) + ": invalid JSON: " + msg);
  }
  if (!doc.is_object()) throw DecodeError(std::string(what) + ": must be a JSON object");
  return doc;
}

// The member `name` of `obj`, or nullptr when absent. JSON null counts as absent.
inline const Json* find(const Json& obj, std::string_view name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

inline const Json& require(const Json& obj, const std::string& parent, std::string_view name) {
  const Json* v = find(obj, name);
  if (v == nullptr) fail(child(parent, name), "is required");
  return *v;
}

inline const Json& as_object(const Json& v, const std::string& path) {
  if (!v.is_object()) fail(path, "must be an object");
  return v;
}

inline const Json& as_array(const Json& v, const std::string& path, size_t max_size) {
  if (!v.is_array()) fail(path, "must be an array");
  if (v.size() > max_size) {
    fail(path, "has " + std::to_string(v.size()) + " elements, at most " +
                   std::to_string(max_size) + " allowed");
  }
  return v;
}

inline uint64_t as_u64(const Json& v, const std::string& path,
                       uint64_t max = std::numeric_limits<uint64_t>::max()) {
  // Integers that do not fit uint64 and numbers with a fraction or exponent parse as floats.
  if (!v.is_number_unsigned()) fail(path, "must be a non-negative integer");
  auto n = v.get<uint64_t>();
  if (n > max) fail(path, "must be at most " + std::to_string(max));
  return n;
}

inline uint32_t as_u32(const Json& v, const std::string& path,
                       uint32_t max = std::numeric_limits<uint32_t>::max()) {
  return static_cast<uint32_t>(as_u64(v, path, max));
}

inline int64_t as_nonneg_i64(const Json& v, const std::string& path) {
  return static_cast<int64_t>(
      as_u64(v, path, static_cast<uint64_t>(std::numeric_limits<int64_t>::max())));
}

inline double as_double(const Json& v, const std::string& path) {
  if (!v.is_number()) fail(path, "must be a number");
  auto d = v.get<double>();
  if (!std::isfinite(d)) fail(path, "must be a finite number");
  return d;
}

inline std::string as_string(const Json& v, const std::string& path) {
  if (!v.is_string()) fail(path, "must be a string");
  return v.get<std::string>();
}

inline HashFamily as_hash(const Json& v, const std::string& path) {
  auto name = as_string(v, path);
  auto family = parse_hash_family(name);
  if (!family) fail(path, "unknown hash family '" + name + "' (murmur2, crc32 or fnv1a)");
  return *family;
}

// A key object's bytes: exactly one of "key" (text) or "key_b64" (base64 of the bytes).
// `path` names the object ("keys[2]").
inline std::string read_key(const Json& obj, const std::string& path, size_t max_key_bytes) {
  const Json* text = find(obj, "key");
  const Json* b64 = find(obj, "key_b64");
  if (text != nullptr && b64 != nullptr) fail(path, "has both key and key_b64; give one");
  if (text == nullptr && b64 == nullptr) fail(path, "needs key or key_b64");
  std::string key;
  std::string key_path;
  if (text != nullptr) {
    key_path = child(path, "key");
    key = as_string(*text, key_path);
  } else {
    key_path = child(path, "key_b64");
    auto encoded = as_string(*b64, key_path);
    if (encoded.size() > (max_key_bytes + 2) / 3 * 4) {
      fail(key_path, "key longer than " + std::to_string(max_key_bytes) + " bytes");
    }
    auto decoded = base64_decode(encoded);
    if (!decoded) fail(key_path, "invalid base64 (standard alphabet, padded, no whitespace)");
    key = std::move(*decoded);
  }
  if (key.size() > max_key_bytes) {
    fail(key_path, "key longer than " + std::to_string(max_key_bytes) + " bytes");
  }
  return key;
}

// Sets the key fields of `obj` ("key" or "key_b64").
template <typename J>
void write_key(J& obj, std::string_view key) {
  auto enc = encode_key(key);
  obj[std::string(enc.field)] = std::move(enc.value);
}

// Serializes strictly: a string that is not UTF-8 in a text field is a caller bug (keys go
// through write_key), reported as std::invalid_argument rather than nlohmann's own type.
template <typename J>
std::string dump(const J& doc, std::string_view what) {
  try {
    return doc.dump();
  } catch (const nlohmann::json::type_error& e) {
    throw std::invalid_argument(std::string(what) + ": cannot encode as JSON: " + e.what());
  }
}

}  // namespace hotkey::json_fields
