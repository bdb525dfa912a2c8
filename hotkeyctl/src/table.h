// How the remote commands print: column-aligned tables, numbers, times and JSON.
// Pure functions and a value type; safe from any thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace hotkeyctl {

// Column-aligned text table; `right` marks the right-aligned (numeric) columns. Widths count
// UTF-8 code points, so non-ASCII keys line up.
class Table {
 public:
  Table(std::vector<std::string> header, std::vector<bool> right)
      : header_(std::move(header)), right_(std::move(right)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // Every line prefixed with `indent`; trailing blanks trimmed.
  void print(std::ostream& out, const std::string& indent = "") const;

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// `v` with `digits` decimals.
std::string fixed(double v, int digits);
// A ratio as a percentage with one decimal ("12.5%").
std::string pct(double v);
// Milliseconds since the epoch as 2026-01-02T03:04:05Z; "-" for 0 or less.
std::string utc_time(int64_t ms);
// The document indented by 2, invalid UTF-8 replaced.
void print_json(std::ostream& out, const nlohmann::json& doc);

}  // namespace hotkeyctl
