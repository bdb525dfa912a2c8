// Fuzz target: the planner fed with whatever reports the decoder accepts (issue #17: one report
// with sample_rate 5e-324 or counts of 2^63 crashed the planner or made it publish a list the
// store then refused). Input: one binary report (application/x-hotkey-report). It goes through
// what Coordinator::ingest does (scaled sketch, the topic window, routed with no list and then
// with the plan's own list, from two producers, over three epochs) and every plan's list must
// satisfy the store's own decoder: shares in [0, 1], finite rates, verified salt tables.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "config.h"
#include "fuzz_check.h"
#include "hotkey/hotkey_list.h"
#include "hotkey/report.h"
#include "planner.h"
#include "store_records.h"
#include "topic_window.h"

namespace {

using namespace hotkey;
using namespace hotkey::coordinator;

// The keys of the report a plan may list at once (what the coordinator keeps per producer).
TrackedKeys tracked_of(const Report& r) {
  TrackedKeys out;
  for (const auto& item : r.items) {
    if (item.count <= item.error) continue;
    const double g = static_cast<double>(item.count - item.error);
    const double mid = static_cast<double>(item.count) - 0.5 * static_cast<double>(item.error);
    out.push_back({item.key, LatestCount{scaled_records(r, g), scaled_records(r, mid)}});
    if (out.size() >= kLatestKeepMax) break;
  }
  return out;
}

PlanResult plan(TopicWindow& w, const TopicSettings& s, const Report& r, const TrackedKeys& keys,
                const HotKeyList* published, int64_t now, std::map<std::string, HotState>& hot) {
  TopicWindow::Snapshot snap = w.snapshot(now);
  PlanInput in;
  in.settings = &s;
  in.topic = r.topic;
  in.partitions = r.partitions;
  in.hash = r.hash;
  in.separator = r.separator;
  in.items = snap.sketch.items();
  in.total = snap.total;
  in.partition_load = std::move(snap.partition_load);
  in.cold_load = std::move(snap.cold_load);
  in.load_scale = snap.total > 0 ? snap.load_total / snap.total : 0.0;
  in.recent_items = snap.recent.items();
  in.recent_total = snap.recent_total;
  in.salted = std::move(snap.salted);
  in.home = std::move(snap.home);
  in.latest_total = static_cast<double>(r.total);
  for (const auto& [key, c] : keys) in.latest[key] = c;
  in.rate = r.window_ms > 0 ? static_cast<double>(r.total) * 1000.0 / r.window_ms : 0.0;
  const std::map<std::string, Pin> pins;
  const std::map<std::string, Deny> denies;
  in.pins = &pins;
  in.denies = &denies;
  in.published = published;
  in.now_ms = now;
  in.detect = true;
  in.detect_fast = true;
  return plan_topic(in, hot);
}

void check(const PlanResult& p, int32_t partitions) {
  HOTKEY_FUZZ_CHECK(p.list.partitions == partitions);
  for (const auto& k : p.list.keys) {
    HOTKEY_FUZZ_CHECK(k.share >= 0 && k.share <= 1);
    HOTKEY_FUZZ_CHECK(k.rate >= 0 && k.rate < 1e300);
    for (const auto& salt : k.salts) {
      HOTKEY_FUZZ_CHECK(salt.partition >= 0 && salt.partition < partitions);
    }
  }
  // What the coordinator would persist, the store's decoder reads back.
  HotKeyList list = p.list;
  list.version = 1;
  const std::string record = encode_list_record(list);
  HOTKEY_FUZZ_CHECK(decode_list_record(record).keys.size() == list.keys.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ReportLimits limits;
  limits.max_items = 4096;
  limits.max_partitions = 4096;  // the planner's cost grows with partitions x salts
  Report r;
  SpaceSaving sketch(1);
  try {
    r = decode_report_binary(std::string_view(reinterpret_cast<const char*>(data), size), limits);
    sketch = scaled_report_sketch(r);
  } catch (const DecodeError&) {
    return 0;
  }
  if (r.partitions < 1) return 0;
  TopicSettings s;
  s.min_rate = 0;
  TopicWindow w(1000, 4, 256);
  std::map<std::string, HotState> hot;
  const TrackedKeys keys = tracked_of(r);
  int64_t now = 1'700'000'000'000;
  w.add(r, sketch, now, r.partitions, nullptr, keys);
  PlanResult first = plan(w, s, r, keys, nullptr, now, hot);
  check(first, r.partitions);
  // Two producers route with the plan's list for two more epochs.
  HotKeyList published = first.list;
  published.version = 1;
  for (int epoch = 1; epoch <= 2; ++epoch) {
    now += 1000;
    Report again = r;
    again.list_version = published.version;
    w.add(again, scaled_report_sketch(again), now, r.partitions, &published, keys);
    again.producer += "-2";
    w.add(again, scaled_report_sketch(again), now, r.partitions, &published, keys);
    PlanResult next = plan(w, s, r, keys, &published, now, hot);
    check(next, r.partitions);
    published = next.list;
    published.version = static_cast<uint64_t>(epoch) + 1;
  }
  return 0;
}
