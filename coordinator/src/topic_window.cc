#include "topic_window.h"

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
    std::vector<SpaceSaving::Item> items;
    items.reserve(r.items.size());
    for (const auto& it : r.items) items.push_back({it.key, scaled(it.count), scaled(it.error)});
    uint32_t capacity = r.sketch_capacity ? r.sketch_capacity : 1;
    return SpaceSaving::from_items(capacity, scaled(r.sketch_total), std::move(items));
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
    e.load_total = 0;
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
                      uint64_t list_version) {
  if (partitions != partitions_) reset_partitions(partitions);
  Epoch& e = epoch_for(now_ms);
  e.pending.push_back(std::move(scaled));
  if (e.pending.size() >= kPendingBatch) flush(e);
  if (report.partitions == partitions_ && report.list_version == list_version &&
      report.partition_counts.size() == e.partition_counts.size()) {
    for (size_t i = 0; i < e.partition_counts.size(); ++i) {
      e.partition_counts[i] += report.partition_counts[i];
    }
    e.load_total += static_cast<double>(report.total);
  }
  e.total += static_cast<double>(report.total);
  ++e.reports;
}

void TopicWindow::reset_partitions(int32_t partitions) {
  partitions_ = partitions;
  for (auto& e : epochs_) {
    e.partition_counts.assign(static_cast<size_t>(partitions), 0);
    e.load_total = 0;
  }
}

TopicWindow::Snapshot TopicWindow::snapshot(int64_t now_ms) {
  const int64_t current = now_ms / epoch_ms_;
  const int64_t oldest = current - static_cast<int64_t>(epochs_.size()) + 1;
  std::vector<const SpaceSaving*> parts;
  Snapshot snap{SpaceSaving(capacity_), std::vector<double>(static_cast<size_t>(partitions_), 0.0),
                0, 0, 0};
  for (auto& e : epochs_) {
    if (e.index < oldest || e.index > current) continue;
    flush(e);
    if (e.sketch) parts.push_back(&*e.sketch);
    for (size_t i = 0; i < e.partition_counts.size() && i < snap.partition_load.size(); ++i) {
      snap.partition_load[i] += static_cast<double>(e.partition_counts[i]);
    }
    snap.load_total += e.load_total;
    snap.total += e.total;
    snap.reports += e.reports;
  }
  if (!parts.empty()) snap.sketch = SpaceSaving::merge_all(parts, capacity_);
  return snap;
}

}  // namespace hotkey::coordinator
