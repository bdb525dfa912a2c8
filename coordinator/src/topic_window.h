// The fleet-wide sliding window of one topic: a ring of epochs, each holding the merged
// (sample-rate scaled) sketches, per-partition record counts and totals of the reports that
// arrived in it. Memory is bounded by epochs x sketch capacity, whatever the producer count.
// Not thread-safe: the owning topic's mutex guards it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hotkey/report.h"
#include "hotkey/space_saving.h"

namespace hotkey::coordinator {

class TopicWindow {
 public:
  TopicWindow(uint32_t epoch_ms, uint32_t window_epochs, uint32_t capacity);

  // Adds one report (its sketch already scaled by 1/sample_rate). Partition counts are
  // only taken when the report's partition count equals `partitions` and `routed_by_list`
  // says all its records were routed with the published list: load measured under an older
  // list would mislead the planner about where cold traffic goes.
  void add(const Report& report, SpaceSaving scaled_sketch, int64_t now_ms, int32_t partitions,
           bool routed_by_list);

  // Drops per-partition counts (partition count changed, or a new list was published).
  void reset_partitions(int32_t partitions);

  // Keys whose records inside the per-partition counts are counted apart (the published
  // list's keys), so the planner can take exactly their traffic out of the partitions they
  // were routed to. Takes effect for reports added from now on; call after reset_partitions.
  void track(std::set<std::string, std::less<>> keys);

  struct Snapshot {
    SpaceSaving sketch;
    std::vector<double> partition_load;  // records per partition over the window
    double load_total = 0;               // records behind partition_load
    uint64_t load_reports = 0;           // reports behind partition_load
    double total = 0;                    // records over the window
    uint64_t reports = 0;
    // Records of each tracked key inside partition_load (guaranteed counts).
    std::map<std::string, double, std::less<>> routed;
    // The most recent traffic only: the current epoch once it is half over, else the
    // previous and the current epoch. Shares here follow a surge or a move within about a
    // second, where the whole window lags by up to its length.
    SpaceSaving recent;
    double recent_total = 0;
    uint64_t recent_reports = 0;
  };
  // The merged window as of now_ms (expired epochs are dropped).
  Snapshot snapshot(int64_t now_ms);

  int64_t window_ms() const { return static_cast<int64_t>(epoch_ms_) * epochs_.size(); }

 private:
  struct Epoch {
    int64_t index = -1;
    std::optional<SpaceSaving> sketch;
    std::vector<SpaceSaving> pending;  // merged in batches: n-way merges are cheaper
    std::vector<uint64_t> partition_counts;
    std::map<std::string, double, std::less<>> routed;  // tracked keys inside partition_counts
    double load_total = 0;
    uint64_t load_reports = 0;
    double total = 0;
    uint64_t reports = 0;
  };
  static constexpr size_t kPendingBatch = 16;

  Epoch& epoch_for(int64_t now_ms);
  void flush(Epoch& e);

  uint32_t epoch_ms_;
  uint32_t capacity_;
  int32_t partitions_ = 0;
  std::set<std::string, std::less<>> tracked_;
  std::vector<Epoch> epochs_;
};

// The report's sketch with counts, errors and total scaled by 1/sample_rate (the fleet-wide
// estimate of real records). Throws DecodeError when the sketch is inconsistent.
SpaceSaving scaled_report_sketch(const Report& report);

}  // namespace hotkey::coordinator
