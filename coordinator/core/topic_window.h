// The fleet-wide sliding window of one topic: a ring of epochs, each holding the merged
// (sample-rate scaled) sketches, per-partition record counts and totals of the reports that
// arrived in it. Memory is bounded by epochs x sketch capacity, whatever the producer count.
// Not thread-safe: the owning topic's mutex guards it.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hotkey/hotkey_list.h"
#include "hotkey/report.h"
#include "hotkey/space_saving.h"

namespace hotkey::coordinator {

// One key's records in one report, scaled by 1/sample_rate: guaranteed (count - error) and
// traffic (the midpoint of [guaranteed, count]).
struct LatestCount {
  double guaranteed = 0;
  double traffic = 0;
  // Producers whose latest report holds the key (the sum over them; 1 in one report).
  uint32_t producers = 1;
};

// The keys of one report large enough to matter for planning (see TopicWindow::add).
using TrackedKeys = std::vector<std::pair<std::string, LatestCount>>;

class TopicWindow {
 public:
  TopicWindow(uint32_t epoch_ms, uint32_t window_epochs, uint32_t capacity);

  // Adds one report (its sketch already scaled by 1/sample_rate). `routed_with` is the list
  // whose tables routed every record of the report (nullptr: unknown, or the report spans a
  // list switch). Partition counts are only taken from such reports whose partition count
  // equals `partitions`; the records of the keys that list salted are taken out of them by
  // its tables into the cold load, so the cold load (a property of the cold keys, not of the
  // list) stays valid across versions. `tracked` (the report's keys near or above the hot
  // threshold) that the list did not salt are counted at home (Snapshot::home).
  void add(const Report& report, SpaceSaving scaled_sketch, int64_t now_ms, int32_t partitions,
           const HotKeyList* routed_with, const TrackedKeys& tracked = {});

  // Drops per-partition counts (partition count changed).
  void reset_partitions(int32_t partitions);

  struct Snapshot {
    SpaceSaving sketch;
    std::vector<double> partition_load;  // records per partition over the window
    // partition_load less the records of the keys salted by the list each report was routed
    // with (spread by that list's tables): cold keys and unlisted keys at their home partition.
    std::vector<double> cold_load;
    double load_total = 0;      // records behind partition_load
    uint64_t load_reports = 0;  // reports behind partition_load
    double total = 0;           // records over the window
    uint64_t reports = 0;
    // Records of each key taken out of cold_load (salted by its report's list; midpoints).
    std::map<std::string, double, std::less<>> salted;
    // Records of each tracked key left in cold_load at its home partition (in the reports
    // behind partition_load, where its list did not salt it). Exact for the keys a plan
    // lists, where scaling the key's window records by load_total / total is not: the
    // reports left out of the load (a list switch) are the ones a surge fills.
    std::map<std::string, double, std::less<>> home;
    // The same records by epoch: (the epoch's end, ms; records), in no order. A key listed
    // now owes its partition the records it sent home just before it was listed (the
    // planner keeps those in the load for the rest of the window; table_planner.cc).
    std::map<std::string, std::vector<std::pair<int64_t, double>>, std::less<>> home_by_epoch;
    // The most recent traffic only: the current epoch once it is half over, else the
    // previous and the current epoch. Shares here follow a surge or a move within about a
    // second, where the whole window lags by up to its length.
    SpaceSaving recent;
    double recent_total = 0;
    uint64_t recent_reports = 0;
    // The oldest updated_at_ms of the lists that routed the reports behind partition_load
    // (int64 min when one routed with no list; int64 max when there are none): a key listed
    // at or before it was salted in every one of those reports.
    int64_t oldest_list_ms = std::numeric_limits<int64_t>::max();
  };
  // The merged window as of now_ms (expired epochs are dropped).
  Snapshot snapshot(int64_t now_ms);

  int64_t window_ms() const { return static_cast<int64_t>(epoch_ms_) * epochs_.size(); }

 private:
  struct Epoch {
    int64_t index = std::numeric_limits<int64_t>::min();  // none yet (any index is valid)
    std::optional<SpaceSaving> sketch;
    std::vector<SpaceSaving> pending;  // merged in batches: n-way merges are cheaper
    std::vector<uint64_t> partition_counts;
    std::vector<double> cold;                           // partition_counts less salted keys
    std::map<std::string, double, std::less<>> salted;  // records taken out of cold
    std::map<std::string, double, std::less<>> home;    // tracked unsalted records in cold
    double load_total = 0;
    uint64_t load_reports = 0;
    int64_t oldest_list_ms = std::numeric_limits<int64_t>::max();  // see Snapshot
    double total = 0;
    uint64_t reports = 0;
    uint64_t generation = 0;  // bumped whenever the epoch's sketch content changes
  };
  static constexpr size_t kPendingBatch = 16;

  Epoch& epoch_for(int64_t now_ms);
  void flush(Epoch& e);

  uint32_t epoch_ms_;
  uint32_t capacity_;
  int32_t partitions_ = 0;
  std::vector<Epoch> epochs_;
  uint64_t next_generation_ = 0;
  // The merge of the window's completed epochs, kept between snapshots: they take no more
  // reports, so a snapshot merges it with the current epoch only (a plan runs under the
  // topic's lock, and re-merging ten full epochs was most of a surge plan's cost). Valid for
  // the (index, generation) of the epochs it was merged from.
  std::vector<std::pair<int64_t, uint64_t>> completed_parts_;
  std::optional<SpaceSaving> completed_;
};

// The records behind `sampled` sketch records of `report`: sampled / sample_rate, at most the
// report's total (a report never stands for more records than it says it sent). Finite for
// every report that passed validate_report (sample_rate >= kMinSampleRate).
double scaled_records(const Report& report, double sampled);

// The report's sketch with counts, errors and total scaled by 1/sample_rate (the fleet-wide
// estimate of real records), each capped at the report's total. Throws DecodeError when the
// report or its sketch is inconsistent.
SpaceSaving scaled_report_sketch(const Report& report);

}  // namespace hotkey::coordinator
