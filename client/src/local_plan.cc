#include "local_plan.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "hotkey/client/sampler.h"
#include "hotkey/salt_planner.h"

namespace hotkey::client::detail {
namespace {

bool contains(const std::vector<std::string>& keys, std::string_view key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

bool under_prefix(const std::vector<std::string>& prefixes, std::string_view key) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& p) { return key.starts_with(p); });
}

}  // namespace

bool at_hot_threshold(uint64_t guaranteed, uint64_t sketch_total, uint64_t total,
                      int32_t partitions, double surge_factor) noexcept {
  if (partitions < 1 || sketch_total == 0 || guaranteed == 0) return false;
  const double g = static_cast<double>(guaranteed);
  if (g * partitions < surge_factor * static_cast<double>(sketch_total)) return false;
  const bool sampled = sketch_total < total;
  const double scale = sampled ? static_cast<double>(total) / static_cast<double>(sketch_total) : 1;
  if (g * scale < Sampler::kSurgeMinRecords) return false;
  return !sampled || guaranteed >= Sampler::kSurgeMinSampled;
}

LocalPlan plan_local_tables(const LocalPlanInput& in) {
  if (in.partitions < 1) throw std::invalid_argument("local tables: partitions must be >= 1");
  if (in.partition_counts.size() != static_cast<size_t>(in.partitions)) {
    throw std::invalid_argument("local tables: " + std::to_string(in.partition_counts.size()) +
                                " partition counts for " + std::to_string(in.partitions) +
                                " partitions");
  }
  SaltSpace space;
  space.family = in.family;
  space.partitions = in.partitions;
  space.separator = in.separator;  // plan_load_aware checks it

  const double scale = in.sketch_total > 0 && in.total > in.sketch_total
                           ? static_cast<double>(in.total) / static_cast<double>(in.sketch_total)
                           : 1.0;
  auto find_item = [&](std::string_view key) -> const ReportItem* {
    for (const auto& item : in.items) {
      if (item.key == key) return &item;
    }
    return nullptr;
  };

  LocalPlan out;
  // Current keys: kept while at least half the threshold (the hysteresis of the coordinator's
  // detector, which lists at the threshold and lets go well below it).
  for (const HotKey& k : in.current) {
    const ReportItem* item = find_item(k.key);
    const uint64_t g = item ? item->count - std::min(item->error, item->count) : 0;
    if (at_hot_threshold(2 * g, in.sketch_total, in.total, in.partitions, in.surge_factor)) {
      out.keys.push_back(k);
    } else {
      out.dropped.push_back(k.key);
    }
  }

  // New keys at the threshold that the last list leaves to this producer.
  struct Candidate {
    const ReportItem* item;
    double records;
  };
  std::vector<Candidate> candidates;
  for (const auto& item : in.items) {
    const uint64_t g = item.count - std::min(item.error, item.count);
    if (!at_hot_threshold(g, in.sketch_total, in.total, in.partitions, in.surge_factor)) continue;
    // An empty key under crc32 is partitioned at random by librdkafka: never routed by a table.
    if (item.key.empty() && in.family == HashFamily::kCrc32) continue;
    if (contains(in.listed, item.key) || contains(in.denied, item.key) ||
        under_prefix(in.never_salt, item.key)) {
      continue;
    }
    if (std::any_of(in.current.begin(), in.current.end(),
                    [&](const HotKey& k) { return k.key == item.key; })) {
      continue;
    }
    const double records =
        (static_cast<double>(item.count) - 0.5 * static_cast<double>(item.error)) * scale;
    candidates.push_back({&item, records});
  }
  std::stable_sort(
      candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        return a.records != b.records ? a.records > b.records : a.item->key < b.item->key;
      });
  const size_t room = kMaxLocalKeys > out.keys.size() ? kMaxLocalKeys - out.keys.size() : 0;
  if (candidates.size() > room) candidates.resize(room);
  if (candidates.empty()) return out;

  // Cold load: what the window put on each partition, less the new keys' records, which went
  // to their home partitions unsalted. Keys already salted (by the list or the local table)
  // stay in it: their spread is part of the load the new tables level.
  std::vector<double> cold(in.partition_counts.begin(), in.partition_counts.end());
  std::vector<HotKeyDemand> demands;
  const double total = static_cast<double>(in.total);
  for (const Candidate& c : candidates) {
    const auto home = static_cast<size_t>(partition_for(in.family, c.item->key, in.partitions));
    cold[home] = std::max(0.0, cold[home] - c.records);
    const double share = total > 0 ? std::min(1.0, c.records / total) : 0.0;
    demands.push_back(HotKeyDemand{c.item->key, c.records,
                                   salt_count_for_share(share, in.partitions, kDefaultMinSalts,
                                                        kDefaultMaxSalts, kDefaultSaltShare)});
  }
  shrink_sampling_noise(cold);
  const std::vector<SaltTable> tables = plan_load_aware(cold, demands, space);
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!verify_table(demands[i].key, tables[i], space)) continue;  // empty: nothing to route
    HotKey k;
    k.key = demands[i].key;
    k.salts = tables[i].salts;
    k.source = KeySource::kDetected;
    k.share = total > 0 ? std::min(1.0, candidates[i].records / total) : 0.0;
    out.added.push_back(k.key);
    out.keys.push_back(std::move(k));
  }
  return out;
}

}  // namespace hotkey::client::detail
