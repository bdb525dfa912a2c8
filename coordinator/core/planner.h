// Hot-key detection and salt-table planning for one topic: turns the fleet-wide window (merged
// sketch, per-partition load) plus operator pins and denies into the next hot-key list, and
// says whether it differs materially from the published one. Pure functions over values;
// callers serialise access to the HotState map they pass in. Prefix policies (policy_index.h)
// apply here, at plan time. plan_topic runs the three parts:
// KeyEstimates (key_estimates.h: what is known of each key), the detector (detector.h: which
// keys are hot) and the table planner (table_planner.h: their salt tables and the list).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "config.h"
#include "hotkey/hotkey_list.h"
#include "hotkey/space_saving.h"
#include "policy_index.h"
#include "state_store.h"
#include "topic_window.h"

namespace hotkey::coordinator {

// Detection memory of one listed (detected) key, for hysteresis.
struct HotState {
  int64_t since_ms = 0;
  int64_t below_since_ms = -1;  // -1: not below its exit threshold
  double entry_share = 0;       // guaranteed share when it entered
  // Listed by the balance-driven selection (below the hot threshold): source "balance" until
  // its share reaches the hot threshold (or a surge's), then "detected" for the rest of its stay.
  bool balance = false;
};

struct PlanInput {
  const TopicSettings* settings = nullptr;
  std::string topic;
  int32_t partitions = 0;
  HashFamily hash = HashFamily::kMurmur2;
  std::string separator = std::string(kDefaultSeparator);
  // The window: merged items (any order), total records, per-partition records (size P, or
  // empty when unknown), fleet-wide messages/s.
  std::vector<SpaceSaving::Item> items;
  double total = 0;
  std::vector<double> partition_load;
  // partition_load less the records of the keys each report's list salted, taken out by
  // that list's tables (size P, or empty): the cold keys, and unsalted keys at home.
  std::vector<double> cold_load;
  // Records of partition_load per sketch count (partition loads may cover fewer reports than
  // the sketch: only those routed with one known list for their whole span). 0: no usable
  // load measured yet (listed keys then keep their published tables).
  double load_scale = 1.0;
  // The recent view (about the last second): merged items and records. Keys are sized on
  // it when it departs from the window (a surge, a move), and a key far above the hot
  // threshold in it is listed without waiting for the window to catch up.
  std::vector<SpaceSaving::Item> recent_items;
  double recent_total = 0;
  // Fresher still: every active producer's latest report (about the last report interval),
  // records of the keys at least kLatestKeepFraction of the hot threshold in some report, and
  // the records of those reports. Preferred over the recent view for the keys it holds.
  std::map<std::string, LatestCount, std::less<>> latest;
  double latest_total = 0;
  // Producers whose latest report is in `latest_total`, and how long the topic has had reports.
  size_t active_producers = 0;
  int64_t topic_age_ms = 0;
  // Records of each key taken out of cold_load because its report's list salted it. A key
  // listed now has its remaining records (window traffic less these) in cold_load at home;
  // a key not listed now goes back home with these.
  std::map<std::string, double, std::less<>> salted;
  // Records of each key left at its home partition in cold_load, for the keys the window
  // tracked (TopicWindow::Snapshot::home); other keys are estimated from their window share.
  std::map<std::string, double, std::less<>> home;
  // The same by epoch: (the epoch's end, ms; records), in no order
  // (TopicWindow::Snapshot::home_by_epoch).
  std::map<std::string, std::vector<std::pair<int64_t, double>>, std::less<>> home_by_epoch;
  // TopicWindow::Snapshot::oldest_list_ms: a key listed at or before it was salted in every
  // report behind cold_load, so none of its records are left at home there.
  int64_t oldest_list_ms = std::numeric_limits<int64_t>::min();
  double rate = 0;
  const std::map<std::string, Pin>* pins = nullptr;
  const std::map<std::string, Deny>* denies = nullptr;
  // The operator's prefix policies (empty: none). Precedence: a pin or deny of the exact key,
  // then the key's longest matching policy, then detection with the topic's settings.
  PolicyIndex policies;
  const HotKeyList* published = nullptr;  // may be null
  int64_t now_ms = 0;
  // False while the window is still filling after a start: detection neither adds nor
  // drops keys (operator changes still apply) ...
  bool detect = true;
  // ... except that with detect_fast a key far above the hot threshold in the latest reports
  // (an unambiguous signal) is listed.
  bool detect_fast = false;
  // A plan run because a report showed a new hot candidate, between the regular ticks: it
  // publishes only when the set of listed keys changes (table refinements wait for a tick).
  bool triggered = false;
};

// Keys whose share of one report is at least this fraction of the hot threshold are kept
// from a producer's latest report (at most kLatestKeepMax of them).
inline constexpr double kLatestKeepFraction = 0.5;
inline constexpr size_t kLatestKeepMax = 64;
// A key enters without waiting for its window share when its share of the recent view is at
// least this many times the hot threshold ...
inline constexpr double kFastEntryFactor = 2.0;
// ... and the recent view holds at least this many of its records (guaranteed).
inline constexpr double kFastEntryMinRecords = 16;
// In a topic's first report interval the latest reports are those of the producers that have
// reported so far: one producer's own key (a per-host or per-session key: 10% of that
// producer's records can be 0.1% of the fleet's) reads as a fleet-wide surge in the first
// report. So until the topic has had reports for this long (the clients' default report
// interval: by then every producer has sent its first), a fast entry needs the key in the
// latest reports of two producers; a fleet-wide surge is in the second report too.
inline constexpr int64_t kFirstRoundMs = 500;
// The balance-driven selection leaves alone a key in the latest reports of at most
// 1 / kOwnKeyProducers of the topic's producers (of two or more), at the hot threshold there and
// below it fleet-wide: those producers' own key (table_planner.cc, producers_own_key).
inline constexpr size_t kOwnKeyProducers = 4;
// A listed key below its exit share in the window whose traffic in the recent view is under
// this fraction of that exit share no longer sends: it leaves with the next version that
// publishes anyway (detector.h, idle_keys).
inline constexpr double kIdleFraction = 0.1;
// A key's recent share replaces its window share for sizing once the two differ by more
// than this fraction of the window share (steady keys keep the steadier window estimate).
inline constexpr double kRecentDeparture = 0.25;
// ... and by more than this many standard deviations of the recent view's counting noise.
inline constexpr double kRecentNoise = 3.0;
// A key that detection listed (at or above the hot threshold) owes its home partition the
// records it sent there in the epochs ending less than this before it entered, and since: a
// surge's records from its start (at most a report interval and a plan before its entry) to
// the producers' switch to the list that salts it. They stay in the load the tables are
// planned against for as long as the window holds them, so home gets less of the salted keys'
// weight until the window has balanced them out.
inline constexpr int64_t kDebtLookbackMs = 1000;
// The balance-driven selection takes a key by its traffic (the midpoint of its sketch bounds)
// only when its guaranteed count is at least this fraction of its count.
inline constexpr double kBalanceMinCertainty = 0.1;
// The balance-driven selection keeps the keys it adds in a plan only when together they lower
// the predicted max/avg by more than this share of the measured load's sampling noise
// (sampling_noise in table_planner.cc: sqrt(2 ln P) x sqrt(P / records), what counting noise
// alone gives a window's max/avg; the cold load is already shrunk toward its mean by the noise
// it explains, so a fraction of it is what a new key must beat). Offline 60 s Zipf runs, four
// seeds (docs/BENCHMARKS.md, issue 26): Zipf 0.8 mean max/avg 1.0225 without the gate, 1.0234
// at a quarter, 1.0247 at a half, 1.031 at the whole (the later plans' refinements are what
// take it below 1.03); Zipf 1.0 1.021 / 1.025 / 1.032 / 1.034.
inline constexpr double kBalanceNoiseShare = 0.25;
// Same keys: the published tables are replaced when their predicted max/avg is worse than the
// fresh plan's by churn_tolerance plus this share of the measured load's sampling noise
// (sqrt(2 ln P) x sqrt(P / records), the most a fresh plan fits). The whole of it kept tables
// planned on the first seconds of a topic for minutes: Zipf 0.8 at 1.047 expected for 54 s
// while each fresh plan predicted 1.02 (tests/coordinator/coordinator_zipf_test.cc). A quarter
// (with churn_tolerance 0.01) gained 0.006-0.015 on 60 s Zipf 1.0-1.5 offline, but small topics
// then re-tabled on their counting noise: the 12-topic fleet of 400 records/s per topic
// (tests/cluster/client_cluster_test.cc) went from max/avg 1.18-1.21 to 1.29-1.39
// (docs/BENCHMARKS.md). Part of that was the clients' round robin restarting at the heaviest
// salt on every list, fixed since (client/src/routing_table.cc): with it fixed, a quarter and
// 0.01 balance that fleet at 1.064-1.072 (half and 0.02: 1.08-1.09) but publish 41-50
// versions in its 15 s over 12 topics (13-25), close to the churn goal of 20 a minute.
inline constexpr double kChurnNoiseShare = 0.5;

struct PlanResult {
  HotKeyList list;  // version left 0: the caller assigns it
  bool material = false;
  double predicted_skew = 1.0;  // max/avg partition load predicted under `list`
  double measured_skew = 1.0;   // max/avg of the window's per-partition load
  double idle_ratio = 0;        // partitions with < 10% of the average load
};

// max/avg of `load` (1.0 for an empty or all-zero load).
double skew_of(const std::vector<double>& load);

// Runs detection (updating `hot`) and planning.
PlanResult plan_topic(const PlanInput& in, std::map<std::string, HotState>& hot);

}  // namespace hotkey::coordinator
