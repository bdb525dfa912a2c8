#include "hotkey/key_codec.h"

#include <array>
#include <cstdint>

namespace hotkey {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> make_decode_table() {
  std::array<int8_t, 256> table{};
  for (auto& v : table) v = -1;
  for (int i = 0; i < 64; ++i)
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  return table;
}
constexpr std::array<int8_t, 256> kDecode = make_decode_table();

bool printable_ascii(unsigned char c) { return c >= 0x20 && c < 0x7f; }

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 when it is not valid.
size_t utf8_sequence_length(std::string_view s, size_t i) noexcept {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  size_t len;
  uint32_t cp;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1Fu;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0Fu;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07u;
  } else {
    return 0;  // continuation byte, overlong lead (C0, C1) or above U+10FFFF (F5..FF)
  }
  if (s.size() - i < len) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return len;
}

}  // namespace

bool is_valid_utf8(std::string_view bytes) noexcept {
  size_t i = 0;
  while (i < bytes.size()) {
    size_t n = utf8_sequence_length(bytes, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8) | p[i + 2];
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  size_t rest = bytes.size() - i;
  if (rest == 1) {
    uint32_t v = uint32_t{p[i]} << 16;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.append("==");
  } else if (rest == 2) {
    uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int8_t v[4];
    size_t pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      if (c == '=' && last && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      // Data after padding ("ab=c") is not base64.
      if (pad > 0) return std::nullopt;
      v[k] = kDecode[c];
      if (v[k] < 0) return std::nullopt;
    }
    uint32_t bits =
        (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    // Canonical form only: the bits that padding discards must be zero, so every byte string
    // has exactly one accepted encoding.
    if (pad == 1 && (bits & 0xFFu) != 0) return std::nullopt;
    if (pad == 2 && (bits & 0xFFFFu) != 0) return std::nullopt;
    out.push_back(static_cast<char>((bits >> 16) & 0xFF));
    if (pad < 2) out.push_back(static_cast<char>((bits >> 8) & 0xFF));
    if (pad < 1) out.push_back(static_cast<char>(bits & 0xFF));
  }
  return out;
}

EncodedKey encode_key(std::string_view key) {
  if (is_valid_utf8(key)) return EncodedKey{"key", std::string(key)};
  return EncodedKey{"key_b64", base64_encode(key)};
}

std::string printable_key(std::string_view key) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(key.size());
  size_t i = 0;
  while (i < key.size()) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c == '\\') {
      out.append("\\\\");
      ++i;
      continue;
    }
    if (printable_ascii(c)) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    size_t n = c >= 0x80 ? utf8_sequence_length(key, i) : 0;
    // Multi-byte UTF-8 passes through, except the C1 controls (U+0080..U+009F) that terminals
    // interpret.
    if (n > 1 && !(n == 2 && c == 0xC2 && static_cast<unsigned char>(key[i + 1]) < 0xA0)) {
      out.append(key.substr(i, n));
      i += n;
      continue;
    }
    out.append("\\x");
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
    ++i;
  }
  return out;
}

}  // namespace hotkey
