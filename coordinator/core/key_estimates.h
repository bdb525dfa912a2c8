// What one plan knows about each key of a topic's window, from the planner's input: its
// guaranteed share (detection: sketch error never lists a key), its traffic (sizing and load
// accounting), the recent view and the latest reports (surges, moves), and where its records
// sit in the measured load (at home, or salted out by the lists reports were routed with).
// Built once per plan; shared by the detector and the table planner.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "planner.h"

namespace hotkey::coordinator {

// Every figure a plan derives goes through one of these, so it is finite by construction
// whatever the reports claimed: a share is a fraction in [0, 1] (NaN counts as 0), anything
// else a finite number >= 0 (NaN and infinities count as 0).
inline double unit(double v) { return v > 0 ? std::min(v, 1.0) : 0.0; }
inline double finite_nonneg(double v) {
  return v > 0 && v <= std::numeric_limits<double>::max() ? v : 0.0;
}

// A key of the window as detection and selection rank it.
struct Candidate {
  const SpaceSaving::Item* item;
  double share;  // guaranteed share of the window
  double rate;   // guaranteed messages/s
  int32_t home;  // home partition, -1 until KeyEstimates::home_of_candidate caches it
};

class KeyEstimates {
 public:
  // `in` must outlive the estimates; in.partitions > 0.
  explicit KeyEstimates(const PlanInput& in);

  // Every window key: those with a share of at least min(hot_fraction, the policies' lowest
  // hot_fraction, balance_min_fraction) / partitions by guaranteed count (highest first), then
  // by key; after them the rest, in no order (a loop over ranked() must stop at the first key below
  // that floor).
  std::vector<Candidate>& ranked() { return ranked_; }
  const std::vector<Candidate>& ranked() const { return ranked_; }
  const Candidate* find(std::string_view key) const;
  int32_t home_of_candidate(Candidate& c) const;

  double total() const { return total_; }            // window records (sketch counts)
  double topic_rate() const { return topic_rate_; }  // fleet-wide messages/s
  // Partition-load units: records behind partition_load (0 when no usable load).
  double load_units() const { return load_units_; }
  bool has_recent() const { return recent_total_ > 0; }

  // Guaranteed window share, guaranteed count and midpoint traffic (0 for a key not held).
  double share_of(const std::string& key) const;
  double guaranteed_of(const std::string& key) const;
  double traffic_of(const std::string& key) const;

  struct Recent {
    double share = 0;    // guaranteed
    double traffic = 0;  // midpoint
    double records = 0;  // records of the view these shares are of (0: no recent view)
  };
  // The latest report round where it holds the key at the hot threshold or above, else the
  // recent epochs. The latest round counts a key only in the reports where it reached
  // kLatestKeepFraction of the threshold, so below the threshold it misses the reports that
  // dropped it and reads low (a key at 0.4 of the threshold read at half its traffic).
  Recent recent_of(const std::string& key) const;
  // The share a listed key is published with (guaranteed): the window's estimate while the
  // recent view agrees with it, the recent one when it departs (a surge is sized for its
  // current traffic; a key that moved away stops holding partitions).
  double current_share_of(const std::string& key) const;
  // The same choice on midpoint traffic.
  double traffic_share_of(const std::string& key) const;
  // A key's traffic to come, in partition-load units.
  double demand_of(const std::string& key) const { return traffic_share_of(key) * load_units_; }
  // Records of the key the lists it was routed with salted out of the cold load.
  double salted_of(const std::string& key) const;
  // A key's records inside cold_load (at its home partition): counted by the window for the
  // keys it tracked that are at the hot threshold (window or recent traffic), else estimated
  // as its window traffic in load units less what its lists salted out of the load. Below the
  // threshold the window's count is partial: a report tracks a key only when it holds
  // kLatestKeepFraction of the threshold, and a key about that size is missing from many
  // reports (its home records were undercounted by up to 40% of a partition's load).
  double routed_of(const std::string& key) const;
  // The key's traffic share in the recent view is above its window share by more than
  // counting noise and kRecentDeparture (a surge the window has not caught up with).
  bool surging(const std::string& key) const;
  // hot_fraction / partitions.
  double hot_share() const;
  bool at_hot_threshold(const std::string& key) const;
  // The part of routed_of a key listed at `since_ms` sent home in the epochs ending after
  // since_ms - kDebtLookbackMs (the records it owes its home partition; planner.h).
  double debt_of(const std::string& key, int64_t since_ms) const;
  int32_t home_of(std::string_view key) const;

  // Detection uses guaranteed counts; sizing and load accounting use the midpoint of
  // [guaranteed, count], which is not biased low: a biased estimate leaves part of a key's
  // traffic in the measured load of the partitions it was routed to, and the next plan chases
  // it there.
  static double traffic(const SpaceSaving::Item& item) {
    return static_cast<double>(item.count) - 0.5 * static_cast<double>(item.error);
  }

 private:
  // The window's share unless the recent one departs from it by more than kRecentDeparture
  // of it and by more than kRecentNoise standard deviations of the recent view's counting
  // noise (a small key's second of records varies by more than a quarter, and sizing it on
  // that noise moves its traffic off the prediction).
  double choose(double window, double recent, double records) const;

  const PlanInput& in_;
  double total_ = 0;
  double topic_rate_ = 0;
  double load_units_ = 0;
  double recent_total_ = 0;
  double latest_total_ = 0;
  std::vector<Candidate> ranked_;
  std::unordered_map<std::string_view, Candidate> by_key_;
  std::unordered_map<std::string_view, Recent> recent_by_key_;
};

}  // namespace hotkey::coordinator
