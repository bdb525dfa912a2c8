#include "hotkey/client/merge.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <tuple>

namespace hotkey::client {
namespace {

template <typename T>
std::optional<T> parse_decimal(std::string_view text) noexcept {
  if (text.empty() || text.size() > 20) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  T out{};
  auto res = std::from_chars(text.data(), text.data() + text.size(), out);
  if (res.ec != std::errc() || res.ptr != text.data() + text.size()) return std::nullopt;
  return out;
}

}  // namespace

RecoveredKey recover_logical_key(std::string_view key, std::optional<std::string_view> salt_header,
                                 std::optional<std::string_view> version_header,
                                 std::string_view separator, KeyRecovery mode) noexcept {
  return recover_logical_key(key, MergeHeaders{salt_header, version_header, false}, separator,
                             mode);
}

RecoveredKey recover_logical_key(std::string_view key, const MergeHeaders& headers,
                                 std::string_view separator, KeyRecovery mode) noexcept {
  RecoveredKey out;
  out.logical_key = key;
  if (headers.version) out.version = parse_decimal<uint64_t>(*headers.version).value_or(0);
  if (headers.salt) {
    if (auto salt = parse_decimal<uint32_t>(*headers.salt)) {
      out.salted = true;
      out.salt = *salt;
      out.from_headers = true;
      // Rekey mode: the key ends with exactly this salt's suffix; route mode: it does not.
      char suffix[kMaxSaltSuffixBytes];
      size_t n = write_salt_suffix(suffix, separator, *salt);
      std::string_view sfx(suffix, n);
      if (key.size() >= n && key.substr(key.size() - n) == sfx) {
        out.logical_key = key.substr(0, key.size() - n);
      }
      return out;
    }
  }
  // v2: the producer says the key is the logical key although it ends like a salted one.
  if (headers.unsalted) return out;
  if (mode == KeyRecovery::kHeadersThenSuffix) {
    std::string_view logical;
    uint32_t salt = 0;
    if (split_salted_key(key, separator, &logical, &salt)) {
      out.logical_key = logical;
      out.salted = true;
      out.salt = salt;
    }
  }
  return out;
}

SubstreamMerger::SubstreamMerger(size_t max_buffered) : max_buffered_(max_buffered) {
  if (max_buffered < 1) throw std::invalid_argument("max_buffered must be >= 1");
}

bool SubstreamMerger::add(Record record) {
  if (buffered_ >= max_buffered_) return false;
  auto& salts = seen_salts_[record.logical_key];
  int64_t id = record.salted ? static_cast<int64_t>(record.salt) : -1;
  if (std::find(salts.begin(), salts.end(), id) == salts.end()) salts.push_back(id);
  auto& queue = pending_[record.logical_key][{id, record.partition}];
  queue.push_back(std::move(record));
  ++buffered_;
  return true;
}

std::map<std::string, std::vector<SubstreamMerger::Record>> SubstreamMerger::drain(
    int64_t watermark_ms) {
  std::map<std::string, std::vector<Record>> out;
  const auto before = [](const Record& a, const Record& b) {
    return std::tie(a.timestamp_ms, a.partition, a.offset) <
           std::tie(b.timestamp_ms, b.partition, b.offset);
  };
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto& substreams = it->second;
    std::vector<Record> ready;
    // A k-way merge of the sub-streams' heads: only a head leaves, so each sub-stream keeps its
    // order; a head stamped after the watermark holds back its sub-stream.
    for (;;) {
      std::deque<Record>* next = nullptr;
      for (auto& [id, queue] : substreams) {
        if (queue.empty() || queue.front().timestamp_ms > watermark_ms) continue;
        if (next == nullptr || before(queue.front(), next->front())) next = &queue;
      }
      if (next == nullptr) break;
      ready.push_back(std::move(next->front()));
      next->pop_front();
    }
    std::erase_if(substreams, [](const auto& entry) { return entry.second.empty(); });
    if (!ready.empty()) {
      buffered_ -= ready.size();
      out.emplace(it->first, std::move(ready));
    }
    it = substreams.empty() ? pending_.erase(it) : std::next(it);
  }
  return out;
}

size_t SubstreamMerger::substreams(std::string_view logical_key) const {
  auto it = seen_salts_.find(logical_key);
  return it == seen_salts_.end() ? 0 : it->second.size();
}

}  // namespace hotkey::client
