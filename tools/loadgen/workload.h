// The synthetic key stream the load generator sends: a Zipf(z) background over K keys plus an
// optional overlay of designated hot keys (a flash-sale surge, a hot set that moves every X
// seconds). Deterministic for a given seed, so every producer of a fleet, and every strategy
// compared in one benchmark, sends the same mix.
//
// Not thread-safe: one Workload per sending thread.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace hotkey::loadgen {

struct WorkloadSpec {
  uint64_t keys = 100000;            // background key space
  double zipf = 1.0;                 // background exponent; 0 is uniform
  std::string key_prefix = "user-";  // background key i is key_prefix + i (rank i, 0 hottest)
  double hot_share = 0;              // share of all traffic that goes to the overlay, [0, 1)
  uint32_t hot_keys = 1;             // overlay keys active at once, sharing hot_share equally
  double hot_start_s = 0;            // overlay starts this many seconds into the run
  double hot_move_s = 0;             // the overlay moves to fresh keys every this many s (0: never)
  std::string hot_prefix = "hot-";   // overlay keys are hot_prefix + n, n = 0, 1, 2, ...
  uint64_t seed = 1;
};

// One generated record's key: background rank or overlay number.
struct KeyRef {
  bool overlay = false;
  uint64_t index = 0;
};

// A key the schedule makes hot, and from when (seconds into the run).
struct DesignatedHotKey {
  std::string key;
  double hot_since_s = 0;
  double share = 0;
};

class Workload {
 public:
  // std::invalid_argument on an inconsistent spec (keys < 1, shares outside [0, 1), ...).
  explicit Workload(WorkloadSpec spec);

  // The key of the next record sent at `t_s` seconds into the run.
  KeyRef next(double t_s);
  // Writes the key bytes of `ref` to `out` (reusing its buffer).
  void key_of(const KeyRef& ref, std::string& out) const;

  // Fraction of background traffic that goes to rank r.
  double background_share(uint64_t rank) const;
  // Keys whose share of all traffic reaches `min_share` at some point of [0, duration_s):
  // overlay keys from the moment they start, background ranks from time 0.
  std::vector<DesignatedHotKey> designated_hot_keys(double min_share, double duration_s) const;

  const WorkloadSpec& spec() const { return spec_; }

 private:
  WorkloadSpec spec_;
  std::vector<double> cdf_;  // background CDF over ranks (empty when uniform)
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
};

}  // namespace hotkey::loadgen
