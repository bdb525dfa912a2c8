// The operator's prefix policies of one topic as the planner reads them (docs/API.md,
// "Policies"): the policy of a key is the one of its longest matching prefix. Built once per
// plan from the topic's policies; the ingest path never consults it (policies apply when a list
// is planned, not per reported entry). Precedence: an exact key's pin or deny is decided before
// any policy is asked (the planner's callers), a policy before detection.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config.h"
#include "state_store.h"

namespace hotkey::coordinator {

// Policies per topic, at most (POST /v1/topics/{topic}/policies answers 409 beyond).
inline constexpr size_t kMaxPoliciesPerTopic = 256;

class PolicyIndex {
 public:
  PolicyIndex() = default;
  // `policies` (by prefix) must outlive the index.
  explicit PolicyIndex(const Policies& policies);

  bool empty() const { return policies_ == nullptr || policies_->empty(); }
  // The policy of the longest prefix of `key` that has one, or null. One map lookup per
  // distinct prefix length, longest first: nothing at all without policies.
  const Policy* match(std::string_view key) const;
  bool never_salt(std::string_view key) const {
    const Policy* p = match(key);
    return p != nullptr && p->never_salt;
  }
  // The hot fraction and salt cap in force for `key` under `s`.
  double hot_fraction(std::string_view key, const TopicSettings& s) const {
    const Policy* p = match(key);
    return p != nullptr && p->hot_fraction > 0 ? p->hot_fraction : s.hot_fraction;
  }
  uint32_t max_salts(std::string_view key, const TopicSettings& s) const {
    const Policy* p = match(key);
    return p != nullptr && p->max_salts > 0 ? p->max_salts : s.max_salts;
  }
  // The lowest hot fraction of `s` and every policy's: detection scans keys down to it.
  double min_hot_fraction(const TopicSettings& s) const {
    return std::min(min_hot_, s.hot_fraction);
  }
  // The never_salt prefixes, in byte order (the list's never_salt).
  const std::vector<std::string>& never_salt_prefixes() const { return never_salt_; }

 private:
  const Policies* policies_ = nullptr;
  std::vector<size_t> lengths_;  // distinct prefix lengths, longest first
  std::vector<std::string> never_salt_;
  double min_hot_ = 1e300;
};

}  // namespace hotkey::coordinator
