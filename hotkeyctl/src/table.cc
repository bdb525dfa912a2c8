#include "table.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace hotkeyctl {

void Table::print(std::ostream& out, const std::string& indent) const {
  std::vector<size_t> w(header_.size());
  auto width = [](const std::string& s) {
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
    out << indent << s << '\n';
  };
  line(header_);
  for (const auto& r : rows_) line(r);
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string pct(double v) { return fixed(v * 100, 1) + "%"; }

std::string utc_time(int64_t ms) {
  if (ms <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void print_json(std::ostream& out, const nlohmann::json& doc) {
  out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

}  // namespace hotkeyctl
