#include "topic_window.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace hotkey::coordinator {

SpaceSaving scaled_report_sketch(const Report& r) {
  try {
    if (r.sample_rate >= 1.0) return report_sketch(r);
    const double scale = 1.0 / r.sample_rate;
    auto scaled = [scale](uint64_t v) {
      double x = std::round(static_cast<double>(v) * scale);
      return x >= 1.8e19 ? uint64_t{1} << 63 : static_cast<uint64_t>(x);
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
  int64_t index = now_ms / epoch_ms_;
  Epoch& e = epochs_[static_cast<size_t>(index % static_cast<int64_t>(epochs_.size()))];
  if (e.index != index) {
    e.index = index;
    if (e.sketch) e.sketch->clear();
    e.pending.clear();
    e.partition_counts.assign(static_cast<size_t>(partitions_), 0);
    e.routed.clear();
    e.load_total = 0;
    e.load_reports = 0;
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
                      bool routed_by_list) {
  if (partitions != partitions_) reset_partitions(partitions);
  Epoch& e = epoch_for(now_ms);
  e.pending.push_back(std::move(scaled));
  if (e.pending.size() >= kPendingBatch) flush(e);
  if (report.partitions == partitions_ && routed_by_list &&
      report.partition_counts.size() == e.partition_counts.size()) {
    for (size_t i = 0; i < e.partition_counts.size(); ++i) {
      e.partition_counts[i] += report.partition_counts[i];
    }
    e.load_total += static_cast<double>(report.total);
    ++e.load_reports;
    if (!tracked_.empty()) {
      const double scale =
          report.sample_rate > 0 && report.sample_rate < 1.0 ? 1.0 / report.sample_rate : 1.0;
      for (const auto& item : report.items) {
        if (item.count <= item.error || !tracked_.contains(item.key)) continue;
        e.routed[item.key] += static_cast<double>(item.count - item.error) * scale;
      }
    }
  }
  e.total += static_cast<double>(report.total);
  ++e.reports;
}

void TopicWindow::reset_partitions(int32_t partitions) {
  partitions_ = partitions;
  for (auto& e : epochs_) {
    e.partition_counts.assign(static_cast<size_t>(partitions), 0);
    e.routed.clear();
    e.load_total = 0;
    e.load_reports = 0;
  }
}

void TopicWindow::track(std::set<std::string, std::less<>> keys) { tracked_ = std::move(keys); }

TopicWindow::Snapshot TopicWindow::snapshot(int64_t now_ms) {
  const int64_t current = now_ms / epoch_ms_;
  const int64_t oldest = current - static_cast<int64_t>(epochs_.size()) + 1;
  // Half an epoch of reports is at least one report round of every producer at the client's
  // default interval; before that the previous epoch fills the recent view in.
  const bool current_is_enough = now_ms % epoch_ms_ >= epoch_ms_ / 2;
  const int64_t recent_from = std::max(oldest, current_is_enough ? current : current - 1);
  std::vector<const SpaceSaving*> parts, recent_parts;
  Snapshot snap{SpaceSaving(capacity_),
                std::vector<double>(static_cast<size_t>(partitions_), 0.0),
                0,
                0,
                0,
                0,
                {},
                SpaceSaving(capacity_),
                0,
                0};
  for (auto& e : epochs_) {
    if (e.index < oldest || e.index > current) continue;
    flush(e);
    if (e.sketch) {
      parts.push_back(&*e.sketch);
      if (e.index >= recent_from) recent_parts.push_back(&*e.sketch);
    }
    if (e.index >= recent_from) {
      snap.recent_total += e.total;
      snap.recent_reports += e.reports;
    }
    for (size_t i = 0; i < e.partition_counts.size() && i < snap.partition_load.size(); ++i) {
      snap.partition_load[i] += static_cast<double>(e.partition_counts[i]);
    }
    for (const auto& [key, count] : e.routed) snap.routed[key] += count;
    snap.load_total += e.load_total;
    snap.load_reports += e.load_reports;
    snap.total += e.total;
    snap.reports += e.reports;
  }
  if (!parts.empty()) snap.sketch = SpaceSaving::merge_all(parts, capacity_);
  if (recent_parts.size() == 1) {
    snap.recent = *recent_parts.front();
  } else if (!recent_parts.empty()) {
    snap.recent = SpaceSaving::merge_all(recent_parts, capacity_);
  }
  return snap;
}

}  // namespace hotkey::coordinator
