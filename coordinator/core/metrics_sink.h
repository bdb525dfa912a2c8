// What the coordinator core measures, as an interface: the core counts and sets, the service
// backs it with prometheus-cpp (coordinator/metrics/metrics.h; the metric names are a contract
// with deploy/'s rules and dashboards). Implementations are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hotkey/hotkey_list.h"

namespace hotkey::coordinator {

// One topic's series. Created when the topic enters memory; destroying it removes the series
// (the topic left memory).
class TopicMetrics {
 public:
  virtual ~TopicMetrics() = default;
  // One accepted report with `entries` sketch entries.
  virtual void report_accepted(double entries) = 0;
  // The list clients see now (version and its keys: counted in all and by source).
  virtual void list_published(uint64_t version, const std::vector<HotKey>& keys) = 0;
  // A new list version was published (not a restore).
  virtual void list_changed() = 0;
  // Fleet-wide keyed messages per second over the window.
  virtual void rate(double per_second) = 0;
  // Measured max/avg partition load and the share of idle partitions.
  virtual void measured(double skew, double idle_ratio) = 0;
  virtual void predicted_skew(double skew) = 0;
  // Active producers and the oldest / newest list version they route with (0: none).
  virtual void producers(size_t count, uint64_t oldest_version, uint64_t newest_version) = 0;
};

class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  virtual std::unique_ptr<TopicMetrics> topic(const std::string& topic) = 0;
  // A report refused by the core (reason label: hash_mismatch, invalid_sketch, ...).
  virtual void rejected(const std::string& reason) = 0;
  virtual void ingest_latency(double seconds) = 0;
  virtual void store_write_latency(double seconds) = 0;
  virtual void set_waiters(double n) = 0;
  virtual void set_store_healthy(bool ok) = 0;
  // A damaged list or topic-meta record left out when the store was loaded.
  virtual void store_record_skipped() = 0;
  // A topic whose plan failed (logged; the topic keeps its published list until a plan works).
  virtual void plan_failed() = 0;
};

}  // namespace hotkey::coordinator
