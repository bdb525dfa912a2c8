#include "key_estimates.h"

#include <algorithm>
#include <cmath>

#include "hotkey/partitioner.h"

namespace hotkey::coordinator {

KeyEstimates::KeyEstimates(const PlanInput& in) : in_(in) {
  total_ = finite_nonneg(in.total);
  topic_rate_ = finite_nonneg(in.rate);
  const double per_count_rate = total_ > 0 ? topic_rate_ / total_ : 0.0;
  ranked_.reserve(in.items.size());
  for (const auto& item : in.items) {
    double g = static_cast<double>(item.guaranteed());
    ranked_.push_back(Candidate{&item, total_ > 0 ? unit(g / total_) : 0.0,
                                finite_nonneg(g * per_count_rate), -1});
  }
  // Only the keys detection or the balance-driven selection may take are ranked; the rest
  // (thousands of tail keys in a full window) follow in no order: both stop at the first key
  // below their floor, and sorting the tail was a third of a plan's cost.
  // A policy's lower hot_fraction lowers the floor for every key (cheaper than asking each
  // key's policy here).
  const double floor = in.settings && in.partitions > 0
                           ? std::min(in.policies.min_hot_fraction(*in.settings),
                                      in.settings->balance_min_fraction) /
                                 in.partitions
                           : 0.0;
  const auto tail = std::partition(ranked_.begin(), ranked_.end(),
                                   [floor](const Candidate& c) { return c.share >= floor; });
  std::sort(ranked_.begin(), tail, [](const Candidate& a, const Candidate& b) {
    if (a.item->guaranteed() != b.item->guaranteed()) {
      return a.item->guaranteed() > b.item->guaranteed();
    }
    return a.item->key < b.item->key;
  });
  for (auto& c : ranked_) by_key_.emplace(c.item->key, c);
  recent_total_ = finite_nonneg(in.recent_total);
  if (recent_total_ > 0) {
    for (const auto& item : in.recent_items) {
      recent_by_key_.emplace(item.key,
                             Recent{unit(static_cast<double>(item.guaranteed()) / recent_total_),
                                    unit(traffic(item) / recent_total_), recent_total_});
    }
  }
  latest_total_ = finite_nonneg(in.latest_total);
  load_units_ = finite_nonneg(total_ * in.load_scale);
}

const Candidate* KeyEstimates::find(std::string_view key) const {
  auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : &it->second;
}

int32_t KeyEstimates::home_of_candidate(Candidate& c) const {
  if (c.home < 0) c.home = home_of(c.item->key);
  return c.home;
}

double KeyEstimates::share_of(const std::string& key) const {
  const Candidate* c = find(key);
  return c ? c->share : 0.0;
}

double KeyEstimates::guaranteed_of(const std::string& key) const {
  const Candidate* c = find(key);
  return c ? static_cast<double>(c->item->guaranteed()) : 0.0;
}

double KeyEstimates::traffic_of(const std::string& key) const {
  const Candidate* c = find(key);
  return c ? traffic(*c->item) : 0.0;
}

KeyEstimates::Recent KeyEstimates::recent_of(const std::string& key) const {
  if (latest_total_ > 0) {
    if (auto it = in_.latest.find(key); it != in_.latest.end()) {
      const double traffic = unit(it->second.traffic / latest_total_);
      if (traffic >= hot_share()) {
        return Recent{unit(it->second.guaranteed / latest_total_), traffic, latest_total_};
      }
    }
  }
  auto it = recent_by_key_.find(key);
  return it == recent_by_key_.end() ? Recent{0, 0, recent_total_} : it->second;
}

double KeyEstimates::choose(double window, double recent, double records) const {
  if (!(recent_total_ > 0)) return window;
  const double departure = std::abs(recent - window);
  if (departure <= kRecentDeparture * window) return window;
  // Poisson: the recent view's count of a key steady at `window` has a standard deviation of
  // sqrt(window * records) records.
  if (records > 0 && departure * records <= kRecentNoise * std::sqrt(window * records)) {
    return window;
  }
  return recent;
}

double KeyEstimates::current_share_of(const std::string& key) const {
  const Recent r = recent_of(key);
  return choose(share_of(key), r.share, r.records);
}

double KeyEstimates::traffic_share_of(const std::string& key) const {
  const Recent r = recent_of(key);
  return choose(total_ > 0 ? unit(traffic_of(key) / total_) : 0.0, r.traffic, r.records);
}

double KeyEstimates::salted_of(const std::string& key) const {
  auto it = in_.salted.find(key);
  return it == in_.salted.end() ? 0.0 : it->second;
}

double KeyEstimates::routed_of(const std::string& key) const {
  if (!(load_units_ > 0)) return 0.0;
  if (auto it = in_.home.find(key); it != in_.home.end() && at_hot_threshold(key)) {
    return finite_nonneg(it->second);
  }
  return finite_nonneg(traffic_of(key) * in_.load_scale - salted_of(key));
}

double KeyEstimates::hot_share() const {
  return in_.settings ? in_.settings->hot_fraction / static_cast<double>(in_.partitions) : 0.0;
}

bool KeyEstimates::at_hot_threshold(const std::string& key) const {
  const double h = hot_share();
  return (total_ > 0 && traffic_of(key) / total_ >= h) || recent_of(key).traffic >= h;
}

bool KeyEstimates::surging(const std::string& key) const {
  const double window = total_ > 0 ? unit(traffic_of(key) / total_) : 0.0;
  const Recent r = recent_of(key);
  return r.traffic > window && choose(window, r.traffic, r.records) != window;
}

double KeyEstimates::debt_of(const std::string& key, int64_t since_ms) const {
  if (!(load_units_ > 0)) return 0.0;
  auto it = in_.home_by_epoch.find(key);
  if (it == in_.home_by_epoch.end()) return 0.0;
  double debt = 0;
  for (const auto& [end_ms, records] : it->second) {
    if (end_ms > since_ms - kDebtLookbackMs) debt += finite_nonneg(records);
  }
  return std::min(finite_nonneg(debt), routed_of(key));
}

int32_t KeyEstimates::home_of(std::string_view key) const {
  return partition_for(in_.hash, key, in_.partitions);
}

}  // namespace hotkey::coordinator
