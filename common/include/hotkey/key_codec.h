// Keys are bytes. In JSON a key travels as "key" (valid UTF-8) or "key_b64" (anything else).
// Pure functions, safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hotkey {

// Strict UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view bytes) noexcept;

// Standard base64 (RFC 4648, with padding).
std::string base64_encode(std::string_view bytes);
// Strict decode: padding required, no whitespace, no characters outside the alphabet.
std::optional<std::string> base64_decode(std::string_view text);

// A key's JSON field name and value: ("key", text) for UTF-8, ("key_b64", base64) otherwise.
struct EncodedKey {
  std::string_view field;  // "key" or "key_b64"
  std::string value;
};
EncodedKey encode_key(std::string_view key);

// A key made safe to print on one terminal line: UTF-8 printable text as is, everything else
// as \xNN escapes (and backslash as \\).
std::string printable_key(std::string_view key);

}  // namespace hotkey
