#include "policy_index.h"

#include <algorithm>
#include <functional>
#include <set>

namespace hotkey::coordinator {

PolicyIndex::PolicyIndex(const Policies& policies) : policies_(&policies) {
  std::set<size_t, std::greater<>> lengths;
  for (const auto& [prefix, p] : policies) {
    lengths.insert(prefix.size());
    if (p.never_salt) never_salt_.push_back(prefix);
    if (p.hot_fraction > 0) min_hot_ = std::min(min_hot_, p.hot_fraction);
  }
  lengths_.assign(lengths.begin(), lengths.end());
}

const Policy* PolicyIndex::match(std::string_view key) const {
  if (empty()) return nullptr;
  for (size_t n : lengths_) {
    if (n > key.size()) continue;
    auto it = policies_->find(key.substr(0, n));
    if (it != policies_->end()) return &it->second;
  }
  return nullptr;
}

}  // namespace hotkey::coordinator
