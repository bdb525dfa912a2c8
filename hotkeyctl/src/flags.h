// Command-line flags for hotkeyctl commands: --name VALUE, --name=VALUE, boolean --name, and
// `--` to end flags. Not thread-safe (a value parsed once in main's thread).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hotkey/partitioner.h"

namespace hotkeyctl {

struct FlagSpec {
  std::string_view name;  // without the leading dashes
  bool takes_value;
};

class Flags {
 public:
  // Throws UsageError for unknown flags, missing values, values given to boolean flags and
  // flags given twice.
  static Flags parse(std::span<const std::string> args, std::span<const FlagSpec> spec);

  bool has(std::string_view name) const { return values_.count(std::string(name)) > 0; }
  std::optional<std::string> value(std::string_view name) const;
  // The flag's value, or UsageError when it was not given.
  std::string required(std::string_view name) const;
  // Strict integer in [min, max]; `fallback` when the flag is absent.
  int64_t integer(std::string_view name, int64_t min, int64_t max,
                  std::optional<int64_t> fallback = std::nullopt) const;
  // Strict finite decimal number in (min, max]; `fallback` when absent.
  double number(std::string_view name, double min_exclusive, double max, double fallback) const;

  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// Flags several commands share, parsed and checked the same way everywhere.
inline constexpr int64_t kMaxPartitions = 100000;
// --partitions N (required), in [1, kMaxPartitions].
int32_t partitions_flag(const Flags& flags);
// --hash H, default murmur2.
hotkey::HashFamily hash_flag(const Flags& flags);
// --separator C, default "#".
std::string separator_flag(const Flags& flags);
// A key argument: its bytes as given, or decoded from base64 when `b64` is set.
std::string key_arg(const std::string& arg, bool b64);

}  // namespace hotkeyctl
