#include "hotkey/salt_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace hotkey {
namespace {

void check_space(const SaltSpace& space) {
  if (space.partitions < 1) {
    throw std::invalid_argument("salt planner: partition count must be >= 1, got " +
                                std::to_string(space.partitions));
  }
  if (!valid_separator(space.separator)) {
    throw std::invalid_argument("salt planner: invalid separator (must be 1.." +
                                std::to_string(kMaxSeparatorBytes) +
                                " bytes, none of them a decimal digit)");
  }
}

// Splits kWeightScale in proportion to `amounts` (largest remainder), so the integer weights
// always sum to exactly kWeightScale; ties in remainders go to the earlier entry.
std::vector<uint32_t> scale_weights(const std::vector<double>& amounts) {
  std::vector<uint32_t> out(amounts.size(), 0);
  double sum = 0;
  for (double a : amounts) sum += a;
  if (amounts.empty()) return out;
  if (!(sum > 0)) {
    // Nothing to level: equal shares.
    std::vector<double> equal(amounts.size(), 1.0);
    return scale_weights(equal);
  }
  std::vector<double> rem(amounts.size());
  uint64_t given = 0;
  for (size_t i = 0; i < amounts.size(); ++i) {
    double exact = amounts[i] / sum * kWeightScale;
    double fl = std::floor(exact);
    out[i] = static_cast<uint32_t>(fl);
    rem[i] = exact - fl;
    given += out[i];
  }
  std::vector<size_t> order(amounts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rem[a] > rem[b]; });
  for (size_t i = 0; given < kWeightScale; i = (i + 1) % order.size(), ++given) ++out[order[i]];
  return out;
}

void check_load(std::span<const double> cold_load, int32_t partitions) {
  if (cold_load.size() != static_cast<size_t>(partitions)) {
    throw std::invalid_argument("salt planner: cold_load has " + std::to_string(cold_load.size()) +
                                " entries, expected one per partition (" +
                                std::to_string(partitions) + ")");
  }
  for (size_t p = 0; p < cold_load.size(); ++p) {
    if (!std::isfinite(cold_load[p]) || cold_load[p] < 0) {
      throw std::invalid_argument("salt planner: cold_load[" + std::to_string(p) +
                                  "] must be finite and >= 0");
    }
  }
}

}  // namespace

SaltTable plan_salts(std::string_view key, uint32_t count, const SaltSpace& space) {
  check_space(space);
  if (count < 1) throw std::invalid_argument("salt planner: salt count must be >= 1");
  // Beyond kWeightScale salts some would get weight 0, which no valid table carries.
  const auto want = std::min<uint64_t>(
      {count, static_cast<uint64_t>(space.partitions), static_cast<uint64_t>(kWeightScale)});
  SaltTable table;
  table.salts.reserve(want);
  std::vector<bool> used(static_cast<size_t>(space.partitions), false);
  for (uint32_t salt = 0; salt < space.search_limit && table.salts.size() < want; ++salt) {
    int32_t p = salted_partition_for(space.family, key, space.separator, salt, space.partitions);
    if (used[static_cast<size_t>(p)]) continue;
    used[static_cast<size_t>(p)] = true;
    table.salts.push_back(SaltAssignment{salt, p, 0});
  }
  table.search_limit_reached = table.salts.size() < want;
  auto weights = scale_weights(std::vector<double>(table.salts.size(), 1.0));
  for (size_t i = 0; i < table.salts.size(); ++i) table.salts[i].weight = weights[i];
  return table;
}

std::vector<uint32_t> salt_per_partition(std::string_view key, const SaltSpace& space) {
  check_space(space);
  const auto n = static_cast<size_t>(space.partitions);
  std::vector<uint32_t> out(n, std::numeric_limits<uint32_t>::max());
  size_t missing = n;
  for (uint32_t salt = 0; salt < space.search_limit && missing > 0; ++salt) {
    auto p = static_cast<size_t>(
        salted_partition_for(space.family, key, space.separator, salt, space.partitions));
    if (out[p] == std::numeric_limits<uint32_t>::max()) {
      out[p] = salt;
      --missing;
    }
  }
  return out;
}

std::vector<SaltTable> plan_load_aware(std::span<const double> cold_load,
                                       std::span<const HotKeyDemand> demands,
                                       const SaltSpace& space) {
  check_space(space);
  check_load(cold_load, space.partitions);
  for (size_t i = 0; i < demands.size(); ++i) {
    if (!std::isfinite(demands[i].rate) || demands[i].rate < 0) {
      throw std::invalid_argument("salt planner: demand " + std::to_string(i) +
                                  " rate must be finite and >= 0");
    }
  }
  const auto np = static_cast<size_t>(space.partitions);
  std::vector<double> load(cold_load.begin(), cold_load.end());
  std::vector<SaltTable> tables(demands.size());

  // Heaviest keys first: they need the most room, and later (lighter) keys fill around them.
  std::vector<size_t> order(demands.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return demands[a].rate > demands[b].rate; });

  for (size_t di : order) {
    const HotKeyDemand& d = demands[di];
    const std::vector<uint32_t> salt_of = salt_per_partition(d.key, space);
    std::vector<size_t> reach;
    reach.reserve(np);
    for (size_t p = 0; p < np; ++p) {
      if (salt_of[p] != std::numeric_limits<uint32_t>::max()) reach.push_back(p);
    }
    const size_t max_salts = d.max_salts == 0 ? np : std::min<size_t>(d.max_salts, np);
    SaltTable& table = tables[di];
    table.search_limit_reached = reach.size() < max_salts;
    if (reach.empty()) continue;
    // Least loaded first; ties by partition id so plans are deterministic.
    std::stable_sort(reach.begin(), reach.end(),
                     [&](size_t a, size_t b) { return load[a] < load[b]; });
    const size_t m = std::min(max_salts, reach.size());
    // Water level over the j least-loaded partitions: (rate + sum of their loads) / j, valid
    // once it does not exceed the next partition's load.
    size_t j = 1;
    double prefix = load[reach[0]];
    double level = d.rate + prefix;
    for (; j < m; ++j) {
      level = (d.rate + prefix) / static_cast<double>(j);
      if (level <= load[reach[j]]) break;
      prefix += load[reach[j]];
    }
    if (j == m) level = (d.rate + prefix) / static_cast<double>(m);
    std::vector<double> amounts(j);
    for (size_t i = 0; i < j; ++i) amounts[i] = std::max(0.0, level - load[reach[i]]);
    std::vector<uint32_t> weights = scale_weights(amounts);
    for (size_t i = 0; i < j; ++i) {
      if (weights[i] == 0) continue;
      const size_t p = reach[i];
      table.salts.push_back(SaltAssignment{salt_of[p], static_cast<int32_t>(p), weights[i]});
      load[p] += d.rate * weights[i] / kWeightScale;
    }
    std::sort(table.salts.begin(), table.salts.end(),
              [](const SaltAssignment& a, const SaltAssignment& b) { return a.salt < b.salt; });
  }
  return tables;
}

std::vector<double> predicted_load(std::span<const double> cold_load,
                                   std::span<const HotKeyDemand> demands,
                                   std::span<const SaltTable> tables) {
  if (demands.size() != tables.size()) {
    throw std::invalid_argument("predicted_load: " + std::to_string(demands.size()) +
                                " demands but " + std::to_string(tables.size()) + " tables");
  }
  std::vector<double> load(cold_load.begin(), cold_load.end());
  for (size_t i = 0; i < tables.size(); ++i) {
    uint64_t sum = 0;
    for (const auto& s : tables[i].salts) sum += s.weight;
    if (sum == 0) continue;
    for (const auto& s : tables[i].salts) {
      if (s.partition < 0 || static_cast<size_t>(s.partition) >= load.size()) {
        throw std::invalid_argument("predicted_load: table " + std::to_string(i) +
                                    " names partition " + std::to_string(s.partition) +
                                    ", outside 0.." + std::to_string(load.size()) + "-1");
      }
      load[static_cast<size_t>(s.partition)] +=
          demands[i].rate * static_cast<double>(s.weight) / static_cast<double>(sum);
    }
  }
  return load;
}

uint32_t salt_count_for_share(double share, int32_t partitions, uint32_t min_salts,
                              uint32_t max_salts, double salt_share) {
  double want = std::ceil(share * partitions / salt_share);
  if (!std::isfinite(want) || want < 0) want = 0;
  auto n = static_cast<uint64_t>(std::min(want, 1e9));
  n = std::clamp<uint64_t>(n, std::min(min_salts, max_salts), max_salts);
  return static_cast<uint32_t>(
      std::min<uint64_t>(n, static_cast<uint64_t>(std::max<int32_t>(partitions, 0))));
}

void shrink_sampling_noise(std::span<double> load) {
  if (load.size() < 2) return;
  double sum = 0;
  for (double v : load) sum += v;
  const double mean = sum / static_cast<double>(load.size());
  if (!(mean > 0)) return;
  double var = 0;
  for (double v : load) var += (v - mean) * (v - mean);
  var /= static_cast<double>(load.size() - 1);
  if (!(var > 0)) return;
  const double keep = std::max(0.0, 1.0 - mean / var);
  for (double& v : load) v = mean + (v - mean) * keep;
}

bool verify_table(std::string_view key, const SaltTable& table, const SaltSpace& space) {
  if (space.partitions < 1 || !valid_separator(space.separator)) return false;
  if (table.salts.empty()) return false;
  std::vector<bool> used(static_cast<size_t>(space.partitions), false);
  for (const auto& s : table.salts) {
    if (s.weight == 0) return false;
    if (s.partition < 0 || s.partition >= space.partitions) return false;
    if (used[static_cast<size_t>(s.partition)]) return false;
    used[static_cast<size_t>(s.partition)] = true;
    if (salted_partition_for(space.family, key, space.separator, s.salt, space.partitions) !=
        s.partition) {
      return false;
    }
  }
  return true;
}

}  // namespace hotkey
