// The coordinator's Prometheus metrics (names are a contract with deploy/'s rules and
// dashboards): the core's MetricsSink plus the transports' own. Thread-safe: prometheus-cpp
// metrics are atomic and families lock on Add.
#pragma once

#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "metrics_sink.h"

namespace hotkey::coordinator {

// Every reason label of hotkey_reports_rejected_total the coordinator emits. Each series
// exists (at 0) from the start, so alert rules and dashboards see it before the first
// rejection (docs/OPERATIONS.md lists them).
inline constexpr const char* kReportRejectionReasons[] = {
    "unauthorized",   "decode",        "content_type",    "too_large",  "too_many_items",
    "invalid_sketch", "hash_mismatch", "too_many_topics", "rate_limit", "too_many_partitions"};

class Metrics final : public MetricsSink {
 public:
  Metrics();

  // MetricsSink
  std::unique_ptr<TopicMetrics> topic(const std::string& topic) override;
  void rejected(const std::string& reason) override;
  void ingest_latency(double seconds) override { ingest_latency_->Observe(seconds); }
  void store_write_latency(double seconds) override { store_latency_->Observe(seconds); }
  void set_waiters(double n) override { waiters_->Set(n); }
  void set_store_healthy(bool ok) override { store_healthy_->Set(ok ? 1 : 0); }
  void store_record_skipped() override { store_records_skipped_->Increment(); }
  void plan_failed() override { plan_errors_->Increment(); }

  // A request refused before its handler ran: reason "rate_limit", "max_connections" or
  // "max_connections_per_client"; scope "reports", "operator_writes" or "connection".
  void request_rejected(const std::string& reason, const std::string& scope);
  // Connections accepted and not yet closed (queued or being served).
  void set_connections(double n) { connections_->Set(n); }
  // Parked subscriptions, and connections the HTTP server's epoll thread holds (parked or idle).
  void set_parked(double subscriptions, double connections) {
    subscriptions_parked_->Set(subscriptions);
    connections_parked_->Set(connections);
  }
  // A parked request's answer compressed with gzip for its Accept-Encoding: once per answer,
  // however many parked requests it answers.
  void parked_answer_gzipped() { parked_gzip_->Increment(); }
  // A connection closed for spending request_timeout_s outside handlers (slow-loris).
  void connection_cut() { connections_cut_->Increment(); }

  // Prometheus text exposition of every metric.
  std::string serialize() const;

 private:
  class Topic;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& reports_;
  prometheus::Family<prometheus::Counter>& entries_;
  prometheus::Family<prometheus::Counter>& rejected_;
  prometheus::Family<prometheus::Gauge>& hot_keys_;
  prometheus::Family<prometheus::Gauge>& hot_keys_by_source_;
  prometheus::Family<prometheus::Gauge>& list_version_;
  prometheus::Family<prometheus::Counter>& list_changes_;
  prometheus::Family<prometheus::Gauge>& producers_;
  prometheus::Family<prometheus::Gauge>& rate_;
  prometheus::Family<prometheus::Gauge>& skew_;
  prometheus::Family<prometheus::Gauge>& predicted_skew_;
  prometheus::Family<prometheus::Gauge>& idle_ratio_;
  prometheus::Family<prometheus::Gauge>& producer_version_oldest_;
  prometheus::Family<prometheus::Gauge>& producer_version_newest_;
  prometheus::Histogram* ingest_latency_;
  prometheus::Histogram* store_latency_;
  prometheus::Gauge* waiters_;
  prometheus::Gauge* store_healthy_;
  prometheus::Family<prometheus::Counter>& requests_rejected_;
  prometheus::Gauge* connections_;
  prometheus::Gauge* subscriptions_parked_;
  prometheus::Gauge* connections_parked_;
  prometheus::Counter* parked_gzip_ = nullptr;
  prometheus::Counter* connections_cut_;
  prometheus::Counter* store_records_skipped_;
  prometheus::Counter* plan_errors_;
};

}  // namespace hotkey::coordinator
