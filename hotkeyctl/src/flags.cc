#include "flags.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "command.h"
#include "hotkey/key_codec.h"

namespace hotkeyctl {

Flags Flags::parse(std::span<const std::string> args, std::span<const FlagSpec> spec) {
  Flags flags;
  bool only_positional = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    // A lone "-" is the usual name for stdin, not a flag.
    if (only_positional || arg.size() < 2 || arg[0] != '-') {
      flags.positional_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      only_positional = true;
      continue;
    }
    if (arg[1] != '-') throw UsageError("unknown flag '" + arg + "' (flags start with --)");
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name.resize(eq);
    }
    const FlagSpec* found = nullptr;
    for (const FlagSpec& s : spec) {
      if (s.name == name) found = &s;
    }
    if (found == nullptr) throw UsageError("unknown flag --" + name);
    if (flags.has(name)) throw UsageError("--" + name + " given twice");
    if (!found->takes_value) {
      if (inline_value) throw UsageError("--" + name + " takes no value");
      flags.values_[name] = "";
      continue;
    }
    if (inline_value) {
      flags.values_[name] = *inline_value;
    } else if (i + 1 < args.size()) {
      flags.values_[name] = args[++i];
    } else {
      throw UsageError("--" + name + " needs a value");
    }
  }
  return flags;
}

std::optional<std::string> Flags::value(std::string_view name) const {
  auto it = values_.find(std::string(name));
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Flags::required(std::string_view name) const {
  auto v = value(name);
  if (!v) throw UsageError("--" + std::string(name) + " is required");
  return *v;
}

int64_t Flags::integer(std::string_view name, int64_t min, int64_t max,
                       std::optional<int64_t> fallback) const {
  auto v = value(name);
  if (!v) {
    if (fallback) return *fallback;
    throw UsageError("--" + std::string(name) + " is required");
  }
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (v->empty() || ec != std::errc() || end != v->data() + v->size() || n < min || n > max) {
    throw UsageError("--" + std::string(name) + ": '" + *v + "' is not an integer in [" +
                     std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return n;
}

double Flags::number(std::string_view name, double min_exclusive, double max,
                     double fallback) const {
  auto v = value(name);
  if (!v) return fallback;
  char* end = nullptr;
  double d = std::strtod(v->c_str(), &end);
  if (v->empty() || end != v->c_str() + v->size() || !std::isfinite(d) || d <= min_exclusive ||
      d > max) {
    throw UsageError("--" + std::string(name) + ": '" + *v + "' is not a number in (" +
                     std::to_string(min_exclusive) + ", " + std::to_string(max) + "]");
  }
  return d;
}

int32_t partitions_flag(const Flags& flags) {
  return static_cast<int32_t>(flags.integer("partitions", 1, kMaxPartitions));
}

hotkey::HashFamily hash_flag(const Flags& flags) {
  auto name = flags.value("hash");
  if (!name) return hotkey::HashFamily::kMurmur2;
  auto family = hotkey::parse_hash_family(*name);
  if (!family) throw UsageError("--hash: unknown family '" + *name + "' (murmur2, crc32, fnv1a)");
  return *family;
}

std::string separator_flag(const Flags& flags) {
  std::string sep = flags.value("separator").value_or(std::string(hotkey::kDefaultSeparator));
  if (!hotkey::valid_separator(sep)) {
    throw UsageError("--separator: '" + sep + "' must be 1-" +
                     std::to_string(hotkey::kMaxSeparatorBytes) + " bytes with no decimal digit");
  }
  return sep;
}

std::string key_arg(const std::string& arg, bool b64) {
  if (!b64) return arg;
  auto key = hotkey::base64_decode(arg);
  if (!key) throw UsageError("'" + arg + "' is not valid base64 (standard alphabet, padded)");
  return *key;
}

}  // namespace hotkeyctl
