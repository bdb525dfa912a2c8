#include "topic_window.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace hotkey::coordinator {

double scaled_records(const Report& r, double sampled) {
  const double total = static_cast<double>(r.total);
  if (!(sampled > 0)) return 0.0;
  if (!(r.sample_rate < 1.0)) return std::min(sampled, total);
  const double x = sampled / r.sample_rate;
  return x < total ? x : total;  // also a NaN or infinity from an unvalidated rate
}

SpaceSaving scaled_report_sketch(const Report& r) {
  try {
    // Checks sample_rate >= kMinSampleRate and the counts against the totals first: the
    // scaling below relies on both.
    if (r.sample_rate >= 1.0) return report_sketch(r);
    validate_report(
        r, ReportLimits{std::numeric_limits<uint32_t>::max(), std::numeric_limits<uint32_t>::max(),
                        std::numeric_limits<int32_t>::max(), std::numeric_limits<size_t>::max()});
    // Monotone and capped at the report's total, so error <= count <= total still holds.
    auto scaled = [&r](uint64_t v) {
      const double x = std::round(scaled_records(r, static_cast<double>(v)));
      return x >= static_cast<double>(r.total) ? r.total : static_cast<uint64_t>(x);
    };
    std::vector<SpaceSaving::ItemView> items;
    items.reserve(r.items.size());
    for (const auto& it : r.items) items.push_back({it.key, scaled(it.count), scaled(it.error)});
    uint32_t capacity = r.sketch_capacity ? r.sketch_capacity : 1;
    return SpaceSaving::from_items(capacity, scaled(r.sketch_total), items);
  } catch (const DecodeError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw DecodeError(std::string("sketch: ") + e.what());
  }
}

TopicWindow::TopicWindow(uint32_t epoch_ms, uint32_t window_epochs, uint32_t capacity)
    : epoch_ms_(epoch_ms), capacity_(capacity), epochs_(window_epochs) {}

TopicWindow::Epoch& TopicWindow::epoch_for(int64_t now_ms) {
  // Floor division and a non-negative slot: a clock set before 1970 (negative now_ms) must
  // not index outside the ring.
  const int64_t em = static_cast<int64_t>(epoch_ms_);
  const int64_t index = now_ms >= 0 ? now_ms / em : -((-now_ms + em - 1) / em);
  const int64_t n = static_cast<int64_t>(epochs_.size());
  Epoch& e = epochs_[static_cast<size_t>(((index % n) + n) % n)];
  if (e.index != index) {
    e.index = index;
    e.generation = ++next_generation_;
    if (e.sketch) e.sketch->clear();
    e.pending.clear();
    e.partition_counts.assign(static_cast<size_t>(partitions_), 0);
    e.cold.assign(static_cast<size_t>(partitions_), 0.0);
    e.salted.clear();
    e.home.clear();
    e.load_total = 0;
    e.load_reports = 0;
    e.oldest_list_ms = std::numeric_limits<int64_t>::max();
    e.total = 0;
    e.reports = 0;
  }
  return e;
}

void TopicWindow::flush(Epoch& e) {
  if (e.pending.empty()) return;
  std::vector<const SpaceSaving*> parts;
  parts.reserve(e.pending.size() + 1);
  if (e.sketch) parts.push_back(&*e.sketch);
  for (const auto& p : e.pending) parts.push_back(&p);
  e.sketch = SpaceSaving::merge_all(parts, capacity_);
  e.pending.clear();
}

void TopicWindow::add(const Report& report, SpaceSaving scaled, int64_t now_ms, int32_t partitions,
                      const HotKeyList* routed_with, const TrackedKeys& tracked) {
  if (partitions != partitions_) reset_partitions(partitions);
  Epoch& e = epoch_for(now_ms);
  if (routed_with && report.partitions == partitions_ &&
      report.partition_counts.size() == e.partition_counts.size()) {
    const size_t n = e.partition_counts.size();
    std::vector<double> cold(n);
    for (size_t i = 0; i < n; ++i) {
      // Saturates: reports claiming 2^63 records each must not wrap a partition to zero.
      uint64_t& pc = e.partition_counts[i];
      if (__builtin_add_overflow(pc, report.partition_counts[i], &pc)) {
        pc = std::numeric_limits<uint64_t>::max();
      }
      cold[i] = static_cast<double>(report.partition_counts[i]);
    }
    // The salted keys' records went where their tables sent them (by weight; the client's
    // weighted round robin keeps to the weights within a record per salt). Taken out in full,
    // even below zero: a small report (a producer of many topics sends a handful of records
    // per topic and round) has no record on most partitions, and clipping each report's share
    // at its count left most of the key's records in the cold load, where the planner charged
    // them to the key's home partition. The window's sum is clamped once (snapshot()).
    if (routed_with->partitions == partitions_) {
      for (const auto& k : routed_with->keys) {
        auto item = scaled.find(k.key);
        if (!item || k.salts.empty()) continue;
        const double records =
            static_cast<double>(item->count) - 0.5 * static_cast<double>(item->error);
        if (!(records > 0)) continue;
        uint64_t sum = 0;
        for (const auto& s : k.salts) sum += s.weight;
        if (sum == 0) continue;
        double taken = 0;
        for (const auto& s : k.salts) {
          if (s.partition < 0 || static_cast<size_t>(s.partition) >= n) continue;
          double& c = cold[static_cast<size_t>(s.partition)];
          const double part = records * static_cast<double>(s.weight) / static_cast<double>(sum);
          c -= part;
          taken += part;
        }
        e.salted[k.key] += taken;
      }
    }
    for (const auto& [key, c] : tracked) {
      if (!(c.traffic > 0)) continue;
      bool salted = false;
      if (routed_with->partitions == partitions_) {
        for (const auto& k : routed_with->keys) {
          if (k.key == key) {
            salted = !k.salts.empty();
            break;
          }
        }
      }
      if (!salted) e.home[key] += c.traffic;
    }
    for (size_t i = 0; i < n; ++i) e.cold[i] += cold[i];
    e.load_total += static_cast<double>(report.total);
    ++e.load_reports;
    // Version 0 (no list) salted nothing: older than any key's listing.
    e.oldest_list_ms =
        std::min(e.oldest_list_ms, routed_with->version == 0 ? std::numeric_limits<int64_t>::min()
                                                             : routed_with->updated_at_ms);
  }
  e.pending.push_back(std::move(scaled));
  e.generation = ++next_generation_;
  if (e.pending.size() >= kPendingBatch) flush(e);
  e.total += static_cast<double>(report.total);
  ++e.reports;
}

void TopicWindow::reset_partitions(int32_t partitions) {
  partitions_ = partitions;
  for (auto& e : epochs_) {
    e.partition_counts.assign(static_cast<size_t>(partitions), 0);
    e.cold.assign(static_cast<size_t>(partitions), 0.0);
    e.salted.clear();
    e.home.clear();
    e.load_total = 0;
    e.load_reports = 0;
  }
}

TopicWindow::Snapshot TopicWindow::snapshot(int64_t now_ms) {
  const int64_t em = static_cast<int64_t>(epoch_ms_);
  const int64_t current = now_ms >= 0 ? now_ms / em : -((-now_ms + em - 1) / em);
  const int64_t oldest = current - static_cast<int64_t>(epochs_.size()) + 1;
  // Half an epoch of reports is at least one report round of every producer at the client's
  // default interval; before that the previous epoch fills the recent view in.
  const bool current_is_enough = now_ms - current * em >= em / 2;
  const int64_t recent_from = std::max(oldest, current_is_enough ? current : current - 1);
  std::vector<const SpaceSaving*> completed_parts, recent_parts;
  const SpaceSaving* current_sketch = nullptr;
  std::vector<std::pair<int64_t, uint64_t>> completed_key;
  Snapshot snap{SpaceSaving(capacity_),
                std::vector<double>(static_cast<size_t>(partitions_), 0.0),
                std::vector<double>(static_cast<size_t>(partitions_), 0.0),
                0,
                0,
                0,
                0,
                {},
                {},
                {},
                SpaceSaving(capacity_),
                0,
                0};
  for (auto& e : epochs_) {
    if (e.index < oldest || e.index > current) continue;
    flush(e);
    if (e.sketch) {
      if (e.index == current) {
        current_sketch = &*e.sketch;
      } else {
        completed_parts.push_back(&*e.sketch);
        completed_key.emplace_back(e.index, e.generation);
      }
      if (e.index >= recent_from) recent_parts.push_back(&*e.sketch);
    }
    if (e.index >= recent_from) {
      snap.recent_total += e.total;
      snap.recent_reports += e.reports;
    }
    for (size_t i = 0; i < e.partition_counts.size() && i < snap.partition_load.size(); ++i) {
      snap.partition_load[i] += static_cast<double>(e.partition_counts[i]);
    }
    for (size_t i = 0; i < e.cold.size() && i < snap.cold_load.size(); ++i) {
      snap.cold_load[i] += e.cold[i];
    }
    for (const auto& [key, count] : e.salted) snap.salted[key] += count;
    const int64_t end_ms = (e.index + 1) * em;
    for (const auto& [key, count] : e.home) {
      snap.home[key] += count;
      snap.home_by_epoch[key].emplace_back(end_ms, count);
    }
    snap.load_total += e.load_total;
    snap.load_reports += e.load_reports;
    snap.oldest_list_ms = std::min(snap.oldest_list_ms, e.oldest_list_ms);
    snap.total += e.total;
    snap.reports += e.reports;
  }
  // Below zero only where the tables' weights sent more than arrived (rounding of a few
  // records per report, or a client that routed some records before it had the table).
  for (double& v : snap.cold_load) v = std::max(0.0, v);
  std::sort(completed_key.begin(), completed_key.end());
  if (completed_key.empty()) {
    completed_.reset();
    completed_parts_.clear();
  } else if (!completed_ || completed_key != completed_parts_) {
    completed_ = SpaceSaving::merge_all(completed_parts, capacity_);
    completed_parts_ = std::move(completed_key);
  }
  // Completed epochs merged once, then with the current one: every count is still its
  // epochs' counts (or minimums) summed, so guaranteed counts (count - error) are the same
  // lower bounds as one merge of every epoch gives.
  if (completed_ && current_sketch) {
    const SpaceSaving* two[] = {&*completed_, current_sketch};
    snap.sketch = SpaceSaving::merge_all(two, capacity_);
  } else if (completed_) {
    snap.sketch = *completed_;
  } else if (current_sketch) {
    snap.sketch = *current_sketch;
  }
  if (recent_parts.size() == 1) {
    snap.recent = *recent_parts.front();
  } else if (!recent_parts.empty()) {
    snap.recent = SpaceSaving::merge_all(recent_parts, capacity_);
  }
  return snap;
}

}  // namespace hotkey::coordinator
