// Reports as simulated producers send them: real Space-Saving sketches over given per-key
// counts, records routed to partitions as a client routes them (through a list's salts when
// the key is listed). Header-only; the caller links hotkey::common.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "hotkey/hotkey_list.h"
#include "hotkey/partitioner.h"
#include "hotkey/report.h"
#include "hotkey/space_saving.h"

namespace hotkey::test_support {

// Per-partition routing of `count` records of `key` as a client would: through its table
// when listed, else the family's partition of the key.
inline void route(const HotKeyList* list, HashFamily hash, int32_t partitions,
                  const std::string& key, uint64_t count, std::vector<uint64_t>& out) {
  if (list && list->partitions == partitions) {
    for (const auto& k : list->keys) {
      if (k.key != key || k.salts.empty()) continue;
      uint64_t sum = 0;
      for (const auto& s : k.salts) sum += s.weight;
      // Cumulative rounding: every salt within one record of its weight's share, as the
      // client's weighted round robin keeps it (flooring each part would leave up to one
      // record per salt for the last one).
      uint64_t cum = 0, given = 0;
      for (const auto& salt : k.salts) {
        cum += salt.weight;
        const uint64_t upto = (count * cum + sum / 2) / sum;
        out[static_cast<size_t>(salt.partition)] += upto - given;
        given = upto;
      }
      return;
    }
  }
  out[static_cast<size_t>(partition_for(hash, key, partitions))] += count;
}

// One producer's report over `counts` (key -> records in the window), sketched with a real
// SpaceSaving of `capacity`.
inline Report make_report(const std::string& producer, const std::string& topic, int32_t partitions,
                          uint64_t seq, const std::map<std::string, uint64_t>& counts,
                          uint32_t capacity = 256, const HotKeyList* list = nullptr,
                          HashFamily hash = HashFamily::kMurmur2) {
  Report r;
  r.producer = producer;
  r.topic = topic;
  r.partitions = partitions;
  r.hash = hash;
  r.window_ms = 1000;
  r.sample_rate = 1.0;
  r.seq = seq;
  r.list_version = list ? list->version : 0;
  r.partition_counts.assign(static_cast<size_t>(partitions), 0);
  SpaceSaving ss(capacity);
  for (const auto& [key, n] : counts) {
    if (n == 0) continue;
    ss.update(key, n);
    r.total += n;
    route(list, hash, partitions, key, n, r.partition_counts);
  }
  r.sketch_capacity = capacity;
  r.sketch_min = ss.min_count();
  r.sketch_total = ss.total();
  for (const auto& it : ss.items()) r.items.push_back({it.key, it.count, it.error});
  return r;
}

// Uniform tail keys "t<i>" for i in [0, distinct): `records` records spread by a seeded RNG.
inline void add_tail(std::map<std::string, uint64_t>& counts, uint64_t records, uint32_t distinct,
                     uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> pick(0, distinct - 1);
  for (uint64_t i = 0; i < records; ++i) counts["t" + std::to_string(pick(rng))] += 1;
}

// The benchmarks' ingest workload (coordinator_bench's BM_Ingest and ingest_instructions send
// the same reports): a full Space-Saving sketch of capacity `entries` over seeded random
// "user-<n>" keys, the total spread evenly over 32 partitions, seq 0 (no duplicate suppression,
// so a replayed body is merged every time).
inline Report random_report(const std::string& producer, const std::string& topic, uint32_t entries,
                            uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> key(0, 20 * entries);
  SpaceSaving ss(entries);
  for (uint32_t i = 0; i < entries * 8; ++i)
    ss.update("user-" + std::to_string(key(rng)), 1 + i % 3);
  Report r;
  r.producer = producer;
  r.topic = topic;
  r.partitions = 32;
  r.window_ms = 1000;
  r.seq = 0;
  r.partition_counts.assign(32, 0);
  for (const auto& it : ss.items()) {
    r.items.push_back({it.key, it.count, it.error});
    r.total += it.count;
  }
  r.total = std::max(r.total, ss.total());
  for (size_t i = 0; i < 32; ++i) r.partition_counts[i] = r.total / 32;
  r.partition_counts[0] += r.total - (r.total / 32) * 32;
  r.sketch_capacity = entries;
  r.sketch_min = ss.min_count();
  r.sketch_total = ss.total();
  return r;
}

}  // namespace hotkey::test_support
