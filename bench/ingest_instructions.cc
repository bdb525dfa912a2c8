// Fixed-count ingest driver for instruction counting under callgrind (repeatable on a loaded
// machine, unlike BM_Ingest's CPU-second figures). Runs the in-process ingest path of a
// POST /v1/reports - decode (JSON or binary), the max_items check, Coordinator::ingest
// (validate, scale, merge into the topic window) - for N reports of E entries from 8
// producers round-robin, the same reports as coordinator_bench's BM_Ingest:
//
//   ingest_instructions json|binary E N       run; prints entries merged and a checksum
//   ingest_instructions dump json|binary E DIR  write the 8 bodies to DIR/body-<i> (to replay
//                                               them over HTTP against any coordinator build)
//
// Under callgrind only the ingest loop is counted (setup and teardown are excluded with
// CALLGRIND_TOGGLE_COLLECT), so instructions per merged entry =
//   Ir / (E * N) of: valgrind --tool=callgrind --collect-atstart=no ingest_instructions ...
// tests/perf/ingest_cost_check.py compares that with bench/ingest_budget.json (CI guard);
// figures in docs/BENCHMARKS.md, "Coordinator".
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "callgrind_toggle.h"
#include "clock.h"
#include "config.h"
#include "coordinator.h"
#include "hotkey/report.h"
#include "hotkey/space_saving.h"
#include "metrics.h"
#include "stderr_log.h"
#include "store.h"
#include "support/reports.h"
#include "support/temp_dir.h"

namespace {

using namespace hotkey;
using namespace hotkey::coordinator;

using test_support::random_report;

std::vector<std::string> bodies(bool binary, uint32_t entries) {
  std::vector<std::string> out;
  for (uint32_t s = 0; s < 8; ++s) {
    Report r = random_report("sender-" + std::to_string(s), "bench", entries, s + 1);
    out.push_back(binary ? encode_report_binary(r) : report_to_json(r));
  }
  return out;
}

int usage() {
  std::fprintf(stderr,
               "usage: ingest_instructions json|binary ENTRIES N\n"
               "       ingest_instructions dump json|binary ENTRIES DIR\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 4 && args[0] == "dump") {
    if (args[1] != "json" && args[1] != "binary") return usage();
    const auto b = bodies(args[1] == "binary", static_cast<uint32_t>(std::atoi(args[2].c_str())));
    std::filesystem::create_directories(args[3]);
    for (size_t i = 0; i < b.size(); ++i) {
      std::ofstream(std::filesystem::path(args[3]) / ("body-" + std::to_string(i)),
                    std::ios::binary)
          << b[i];
    }
    return 0;
  }
  if (args.size() != 3 || (args[0] != "json" && args[0] != "binary")) return usage();
  const bool binary = args[0] == "binary";
  const auto entries = static_cast<uint32_t>(std::atoi(args[1].c_str()));
  const long n = std::atol(args[2].c_str());
  if (entries == 0 || n <= 0) return usage();
  const auto b = bodies(binary, entries);

  const test_support::TempDir tmp("hotkey-ingest");
  const std::filesystem::path& dir = tmp.path();
  int rc = 0;
  {
    CoordinatorConfig cfg;
    cfg.warmup_ms = 0;
    std::string error;
    auto store = Store::open((dir / "data").string(), &error);
    if (!store) {
      std::fprintf(stderr, "store: %s\n", error.c_str());
      return 1;
    }
    Metrics metrics;
    ManualClock clock;
    StderrLog log;
    Coordinator coord(cfg, *store, metrics, clock, log);
    ReportLimits lim = cfg.limits;
    lim.max_items = std::numeric_limits<uint32_t>::max();  // as the HTTP handler decodes
    uint64_t merged = 0, failed = 0;
    CALLGRIND_TOGGLE_COLLECT;
    for (long i = 0; i < n; ++i) {
      const std::string& body = b[static_cast<size_t>(i % 8)];
      Report r = binary ? decode_report_binary(body, lim) : parse_report_json(body, lim);
      if (r.items.size() > cfg.limits.max_items) {
        ++failed;
        continue;
      }
      const size_t items = r.items.size();
      if (coord.ingest(std::move(r)).ok()) {
        merged += items;
      } else {
        ++failed;
      }
      clock.advance_ms(1);  // 1,000 reports per second: epochs turn over as in BM_Ingest
    }
    CALLGRIND_TOGGLE_COLLECT;
    std::printf("merged_entries %llu failed %llu\n", static_cast<unsigned long long>(merged),
                static_cast<unsigned long long>(failed));
    rc = failed ? 1 : 0;
  }
  return rc;
}
