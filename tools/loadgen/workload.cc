#include "workload.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace hotkey::loadgen {

Workload::Workload(WorkloadSpec spec) : spec_(std::move(spec)), rng_(spec_.seed) {
  if (spec_.keys < 1) throw std::invalid_argument("workload: keys must be >= 1");
  if (spec_.zipf < 0 || spec_.zipf > 10) throw std::invalid_argument("workload: zipf in [0, 10]");
  if (spec_.hot_share < 0 || spec_.hot_share >= 1) {
    throw std::invalid_argument("workload: hot share must be in [0, 1)");
  }
  if (spec_.hot_keys < 1) throw std::invalid_argument("workload: hot keys must be >= 1");
  if (spec_.hot_start_s < 0 || spec_.hot_move_s < 0) {
    throw std::invalid_argument("workload: hot start and move period must be >= 0");
  }
  if (spec_.zipf > 0) {
    // An explicit CDF keeps sampling exact for any exponent (including z <= 1, where the
    // rejection samplers need care); 100k doubles and a binary search per record are cheap.
    cdf_.resize(spec_.keys);
    double sum = 0;
    for (uint64_t r = 0; r < spec_.keys; ++r) {
      sum += std::pow(static_cast<double>(r + 1), -spec_.zipf);
      cdf_[r] = sum;
    }
    for (auto& c : cdf_) c /= sum;
    cdf_.back() = 1.0;
  }
}

KeyRef Workload::next(double t_s) {
  double u = unit_(rng_);
  if (spec_.hot_share > 0 && t_s >= spec_.hot_start_s) {
    if (u < spec_.hot_share) {
      uint64_t epoch = spec_.hot_move_s > 0
                           ? static_cast<uint64_t>((t_s - spec_.hot_start_s) / spec_.hot_move_s)
                           : 0;
      auto j = static_cast<uint64_t>(u / spec_.hot_share * spec_.hot_keys);
      j = std::min<uint64_t>(j, spec_.hot_keys - 1);
      return {true, epoch * spec_.hot_keys + j};
    }
    u = unit_(rng_);
  }
  if (cdf_.empty()) {
    return {false, std::min<uint64_t>(static_cast<uint64_t>(u * static_cast<double>(spec_.keys)),
                                      spec_.keys - 1)};
  }
  auto it = std::lower_bound(cdf_.begin(), cdf_.end(), u);
  return {false,
          static_cast<uint64_t>(std::min<std::ptrdiff_t>(it - cdf_.begin(), std::ssize(cdf_) - 1))};
}

void Workload::key_of(const KeyRef& ref, std::string& out) const {
  out.assign(ref.overlay ? spec_.hot_prefix : spec_.key_prefix);
  out.append(std::to_string(ref.index));
}

double Workload::background_share(uint64_t rank) const {
  if (rank >= spec_.keys) return 0;
  if (cdf_.empty()) return 1.0 / static_cast<double>(spec_.keys);
  return rank == 0 ? cdf_[0] : cdf_[rank] - cdf_[rank - 1];
}

std::vector<DesignatedHotKey> Workload::designated_hot_keys(double min_share,
                                                            double duration_s) const {
  std::vector<DesignatedHotKey> out;
  if (spec_.hot_share > 0 && spec_.hot_start_s < duration_s) {
    const double each = spec_.hot_share / spec_.hot_keys;
    if (each >= min_share) {
      uint64_t epochs = 1;
      if (spec_.hot_move_s > 0) {
        epochs =
            static_cast<uint64_t>(std::ceil((duration_s - spec_.hot_start_s) / spec_.hot_move_s));
      }
      for (uint64_t e = 0; e < epochs; ++e) {
        for (uint32_t j = 0; j < spec_.hot_keys; ++j) {
          out.push_back({spec_.hot_prefix + std::to_string(e * spec_.hot_keys + j),
                         spec_.hot_start_s + static_cast<double>(e) * spec_.hot_move_s, each});
        }
      }
    }
  }
  // Background shares shrink once the overlay runs; a rank counts if it is hot at any time.
  for (uint64_t r = 0; r < spec_.keys; ++r) {
    double share = background_share(r);
    if (share < min_share) break;  // shares fall with rank
    out.push_back({spec_.key_prefix + std::to_string(r), 0.0, share});
  }
  return out;
}

}  // namespace hotkey::loadgen
