// Fixed-count planning driver for instruction counting under callgrind (repeatable on a loaded
// machine). Fills one topic's 10 s window the way the balance benchmark's fleets do, then runs
// N plans (Coordinator::tick: the window snapshot, detection, the tables), each after one more
// round of reports:
//
//   plan_instructions seller N   64 partitions, 16 producers at 1,000 records/s, one key at
//                                45% (the bench's seller45), the rest uniform over 100k keys
//   plan_instructions zipf N     32 partitions, 4 producers at 4,000 records/s, Zipf(1.0) over
//                                100k keys (the bench's zipf1.0)
//
// Producers report every 500 ms with capacity-256 sketches. Under callgrind only the plans are
// counted (CALLGRIND_TOGGLE_COLLECT around tick()), so instructions per plan =
//   Ir / N of: valgrind --tool=callgrind --collect-atstart=no plan_instructions MODE N
// bench/plan_cost_check.py compares that with bench/plan_budget.json (CI guard); figures in
// docs/BENCHMARKS.md, "Coordinator". A plan runs under the topic's lock, so its cost is what
// a surge's report waits for before the list that salts it is published.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "callgrind_toggle.h"
#include "clock.h"
#include "config.h"
#include "coordinator.h"
#include "hotkey/partitioner.h"
#include "hotkey/report.h"
#include "hotkey/space_saving.h"
#include "metrics.h"
#include "stderr_log.h"
#include "store.h"
#include "support/temp_dir.h"

namespace {

using namespace hotkey;
using namespace hotkey::coordinator;

constexpr int64_t kRoundMs = 500;
constexpr uint32_t kKeys = 100000;
constexpr uint32_t kCapacity = 256;

struct Workload {
  int32_t partitions;
  int producers;
  uint32_t records_per_report;
  double seller_share;  // seller-0's share; 0: Zipf(1.0) over the keys
};

class KeyStream {
 public:
  KeyStream(const Workload& w, uint32_t seed) : w_(w), rng_(seed), user_(0, kKeys - 1) {
    if (w.seller_share == 0) {
      double sum = 0;
      cdf_.reserve(kKeys);
      for (uint32_t i = 0; i < kKeys; ++i) cdf_.push_back(sum += 1.0 / (i + 1.0));
      for (double& c : cdf_) c /= sum;
    }
  }
  std::string next() {
    if (w_.seller_share > 0) {
      if (std::uniform_real_distribution<double>(0, 1)(rng_) < w_.seller_share) {
        return "seller-0";
      }
      return "user-" + std::to_string(user_(rng_));
    }
    const double u = std::uniform_real_distribution<double>(0, 1)(rng_);
    const auto rank =
        static_cast<size_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
    return "user-" + std::to_string(std::min<size_t>(rank, kKeys - 1));
  }

 private:
  Workload w_;
  std::mt19937 rng_;
  std::uniform_int_distribution<uint32_t> user_;
  std::vector<double> cdf_;
};

// One producer's report of one round, routed with `list` (salted keys over their tables'
// salts in turn, every other key at home), as the client would send it.
Report make_report(const Workload& w, KeyStream& keys, const std::string& producer, uint64_t seq,
                   const HotKeyList& list) {
  SpaceSaving ss(kCapacity);
  Report r;
  r.producer = producer;
  r.topic = "bench";
  r.partitions = w.partitions;
  r.window_ms = static_cast<uint32_t>(kRoundMs);
  r.seq = seq;
  r.list_version = list.version;
  r.partition_counts.assign(static_cast<size_t>(w.partitions), 0);
  std::map<std::string, size_t> turn;
  for (uint32_t i = 0; i < w.records_per_report; ++i) {
    const std::string key = keys.next();
    ss.update(key, 1);
    int32_t p = partition_for(HashFamily::kMurmur2, key, w.partitions);
    for (const auto& hk : list.keys) {
      if (hk.key == key && !hk.salts.empty()) {
        p = hk.salts[turn[key]++ % hk.salts.size()].partition;
        break;
      }
    }
    r.partition_counts[static_cast<size_t>(p)] += 1;
  }
  for (const auto& it : ss.items()) r.items.push_back({it.key, it.count, it.error});
  r.total = w.records_per_report;
  r.sketch_capacity = kCapacity;
  r.sketch_min = ss.min_count();
  r.sketch_total = ss.total();
  return r;
}

int usage() {
  std::fprintf(stderr, "usage: plan_instructions seller|zipf N\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return usage();
  const std::string mode = argv[1];
  const long n = std::atol(argv[2]);
  Workload w{};
  if (mode == "seller") {
    w = Workload{64, 16, 500, 0.45};
  } else if (mode == "zipf") {
    w = Workload{32, 4, 2000, 0.0};
  } else {
    return usage();
  }
  if (n <= 0) return usage();

  const test_support::TempDir tmp("hotkey-plan");
  CoordinatorConfig cfg;
  cfg.warmup_ms = 0;
  std::string error;
  auto store = Store::open((tmp.path() / "data").string(), &error);
  if (!store) {
    std::fprintf(stderr, "store: %s\n", error.c_str());
    return 1;
  }
  Metrics metrics;
  ManualClock clock;
  StderrLog log;
  Coordinator coord(cfg, *store, metrics, clock, log);
  std::vector<KeyStream> streams;
  for (int p = 0; p < w.producers; ++p) streams.emplace_back(w, static_cast<uint32_t>(p + 1));
  std::vector<uint64_t> seq(static_cast<size_t>(w.producers), 0);
  const int64_t step = kRoundMs / w.producers;
  auto round = [&] {
    const auto pub = coord.current_list("bench");
    const HotKeyList list = pub ? pub->list : HotKeyList{};
    for (int p = 0; p < w.producers; ++p) {
      const auto i = static_cast<size_t>(p);
      if (!coord.ingest(make_report(w, streams[i], "producer-" + std::to_string(p), ++seq[i], list))
               .ok()) {
        std::fprintf(stderr, "ingest failed\n");
        std::exit(1);
      }
      clock.advance_ms(step);
    }
  };
  // A full window, planned every second as the background thread would.
  for (int r = 0; r < 2 * 10; ++r) {
    round();
    if (r % 2 == 1) coord.tick();
  }
  double wall_ms = 0;
  for (long i = 0; i < n; ++i) {
    round();
    const auto start = std::chrono::steady_clock::now();
    CALLGRIND_TOGGLE_COLLECT;
    coord.tick();
    CALLGRIND_TOGGLE_COLLECT;
    wall_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  const auto pub = coord.current_list("bench");
  std::printf("plans %ld keys_listed %zu version %llu wall_ms_per_plan %.2f\n", n,
              pub ? pub->list.keys.size() : 0,
              static_cast<unsigned long long>(pub ? pub->list.version : 0),
              wall_ms / static_cast<double>(n));
  return 0;
}
