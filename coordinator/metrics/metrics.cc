#include "metrics.h"

#include <array>
#include <map>
#include <vector>

#include <prometheus/text_serializer.h>

namespace hotkey::coordinator {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

prometheus::Histogram::BucketBoundaries latency_buckets() {
  // 25 us .. ~3 s, doubling.
  prometheus::Histogram::BucketBoundaries b;
  for (double v = 25e-6; v < 4.0; v *= 2) b.push_back(v);
  return b;
}

}  // namespace

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      reports_(BuildCounter()
                   .Name("hotkey_reports_total")
                   .Help("Accepted producer reports")
                   .Register(*registry_)),
      entries_(BuildCounter()
                   .Name("hotkey_report_entries_total")
                   .Help("Sketch entries merged from accepted reports")
                   .Register(*registry_)),
      rejected_(BuildCounter()
                    .Name("hotkey_reports_rejected_total")
                    .Help("Rejected reports by reason")
                    .Register(*registry_)),
      hot_keys_(BuildGauge()
                    .Name("hotkey_hot_keys")
                    .Help("Keys in the published hot-key list")
                    .Register(*registry_)),
      hot_keys_by_source_(BuildGauge()
                              .Name("hotkey_hot_keys_by_source")
                              .Help("Keys in the published hot-key list by why they are salted "
                                    "(source: detected, balance, pinned)")
                              .Register(*registry_)),
      list_version_(BuildGauge()
                        .Name("hotkey_list_version")
                        .Help("Version of the published hot-key list")
                        .Register(*registry_)),
      list_changes_(BuildCounter()
                        .Name("hotkey_list_changes_total")
                        .Help("Hot-key list versions published")
                        .Register(*registry_)),
      producers_(BuildGauge()
                     .Name("hotkey_producers")
                     .Help("Producers seen within the producer timeout")
                     .Register(*registry_)),
      rate_(BuildGauge()
                .Name("hotkey_topic_rate")
                .Help("Fleet-wide keyed messages per second")
                .Register(*registry_)),
      skew_(BuildGauge()
                .Name("hotkey_partition_skew")
                .Help("Measured max/avg per-partition load over the window")
                .Register(*registry_)),
      predicted_skew_(BuildGauge()
                          .Name("hotkey_predicted_partition_skew")
                          .Help("Predicted max/avg per-partition load under the planned list")
                          .Register(*registry_)),
      idle_ratio_(BuildGauge()
                      .Name("hotkey_idle_partitions_ratio")
                      .Help("Share of partitions with under 10% of the average load")
                      .Register(*registry_)),
      producer_version_oldest_(BuildGauge()
                                   .Name("hotkey_producer_list_version_oldest")
                                   .Help("Oldest list version the topic's active producers "
                                         "report routing with")
                                   .Register(*registry_)),
      producer_version_newest_(BuildGauge()
                                   .Name("hotkey_producer_list_version_newest")
                                   .Help("Newest list version the topic's active producers "
                                         "report routing with")
                                   .Register(*registry_)),
      ingest_latency_(&BuildHistogram()
                           .Name("hotkey_ingest_latency_seconds")
                           .Help("Time to decode, validate and merge one report")
                           .Register(*registry_)
                           .Add({}, latency_buckets())),
      store_latency_(&BuildHistogram()
                          .Name("hotkey_store_write_latency_seconds")
                          .Help("Synced RocksDB batch write latency")
                          .Register(*registry_)
                          .Add({}, latency_buckets())),
      waiters_(&BuildGauge()
                    .Name("hotkey_longpoll_waiters")
                    .Help("Parked readers: GET /v1/hotkeys long-polls and subscriptions "
                          "together (what max_waiters bounds)")
                    .Register(*registry_)
                    .Add({})),
      store_healthy_(&BuildGauge()
                          .Name("hotkey_store_healthy")
                          .Help("1 when the last store write or probe succeeded")
                          .Register(*registry_)
                          .Add({})),
      requests_rejected_(BuildCounter()
                             .Name("hotkey_requests_rejected_total")
                             .Help("Requests refused before their handler ran (rate and "
                                   "connection limits) by reason and scope")
                             .Register(*registry_)),
      connections_(
          &BuildGauge()
               .Name("hotkey_http_connections")
               .Help(
                   "HTTP connections accepted and not yet closed (queued, served, parked or idle)")
               .Register(*registry_)
               .Add({})),
      subscriptions_parked_(&BuildGauge()
                                 .Name("hotkey_subscriptions_parked")
                                 .Help("Parked POST /v1/hotkeys/subscribe requests (part of "
                                       "hotkey_longpoll_waiters)")
                                 .Register(*registry_)
                                 .Add({})),
      connections_parked_(&BuildGauge()
                               .Name("hotkey_http_connections_parked")
                               .Help("HTTP connections held without a worker thread: parked "
                                     "requests and connections idle between requests")
                               .Register(*registry_)
                               .Add({})),
      connections_cut_(&BuildCounter()
                            .Name("hotkey_http_connections_cut_total")
                            .Help("Connections closed after request_timeout_s outside a "
                                  "handler (slow or idle clients)")
                            .Register(*registry_)
                            .Add({})),
      store_records_skipped_(&BuildCounter()
                                  .Name("hotkey_store_records_skipped_total")
                                  .Help("Damaged list or topic-meta records left out when the "
                                        "data dir was loaded (replanned from fresh reports)")
                                  .Register(*registry_)
                                  .Add({})),
      plan_errors_(&BuildCounter()
                        .Name("hotkey_plan_errors_total")
                        .Help("Topic plans that failed; the topic keeps its published list")
                        .Register(*registry_)
                        .Add({})) {
  store_healthy_->Set(1);
  auto& compressed = BuildCounter()
                         .Name("hotkey_http_parked_answers_compressed_total")
                         .Help(
                             "Parked requests' answers compressed for their Accept-Encoding, "
                             "by encoding: once per answer shared by a publication's requests")
                         .Register(*registry_);
  parked_gzip_ = &compressed.Add({{"encoding", "gzip"}});
  // Labelled series that rules and panels use exist from the first scrape.
  for (const char* reason : kReportRejectionReasons) rejected_.Add({{"reason", reason}});
  for (const auto& [reason, scope] :
       {std::pair{"rate_limit", "reports"}, std::pair{"rate_limit", "operator_writes"},
        std::pair{"max_connections", "connection"},
        std::pair{"max_connections_per_client", "connection"}}) {
    requests_rejected_.Add({{"reason", reason}, {"scope", scope}});
  }
}

// One topic's series; destroying it removes them.
class Metrics::Topic final : public TopicMetrics {
 public:
  Topic(Metrics& m, const std::string& topic) {
    const std::map<std::string, std::string> labels{{"topic", topic}};
    // Each series is kept with its family, so the destructor removes exactly what was added.
    auto counter = [&](prometheus::Family<prometheus::Counter>& f) {
      counters_.push_back({&f, &f.Add(labels)});
      return counters_.back().metric;
    };
    auto gauge = [&](prometheus::Family<prometheus::Gauge>& f) {
      gauges_.push_back({&f, &f.Add(labels)});
      return gauges_.back().metric;
    };
    reports_ = counter(m.reports_);
    entries_ = counter(m.entries_);
    list_changes_ = counter(m.list_changes_);
    hot_keys_ = gauge(m.hot_keys_);
    for (KeySource src : {KeySource::kDetected, KeySource::kBalance, KeySource::kPinned}) {
      auto& f = m.hot_keys_by_source_;
      auto* g = &f.Add({{"topic", topic}, {"source", std::string(to_string(src))}});
      gauges_.push_back({&f, g});
      by_source_[static_cast<size_t>(src)] = g;
    }
    list_version_ = gauge(m.list_version_);
    producers_ = gauge(m.producers_);
    rate_ = gauge(m.rate_);
    skew_ = gauge(m.skew_);
    predicted_skew_ = gauge(m.predicted_skew_);
    idle_ratio_ = gauge(m.idle_ratio_);
    producer_version_oldest_ = gauge(m.producer_version_oldest_);
    producer_version_newest_ = gauge(m.producer_version_newest_);
  }
  ~Topic() override {
    for (const auto& s : counters_) s.family->Remove(s.metric);
    for (const auto& s : gauges_) s.family->Remove(s.metric);
  }
  Topic(const Topic&) = delete;
  Topic& operator=(const Topic&) = delete;

  void report_accepted(double entries) override {
    reports_->Increment();
    entries_->Increment(entries);
  }
  void list_published(uint64_t version, const std::vector<HotKey>& keys) override {
    list_version_->Set(static_cast<double>(version));
    hot_keys_->Set(static_cast<double>(keys.size()));
    std::array<size_t, 3> counts{};
    for (const auto& k : keys) ++counts[static_cast<size_t>(k.source)];
    for (size_t i = 0; i < counts.size(); ++i) by_source_[i]->Set(static_cast<double>(counts[i]));
  }
  void list_changed() override { list_changes_->Increment(); }
  void rate(double per_second) override { rate_->Set(per_second); }
  void measured(double skew, double idle_ratio) override {
    skew_->Set(skew);
    idle_ratio_->Set(idle_ratio);
  }
  void predicted_skew(double skew) override { predicted_skew_->Set(skew); }
  void producers(size_t count, uint64_t oldest_version, uint64_t newest_version) override {
    producers_->Set(static_cast<double>(count));
    producer_version_oldest_->Set(static_cast<double>(oldest_version));
    producer_version_newest_->Set(static_cast<double>(newest_version));
  }

 private:
  template <typename T>
  struct Series {
    prometheus::Family<T>* family;
    T* metric;
  };
  std::vector<Series<prometheus::Counter>> counters_;
  std::vector<Series<prometheus::Gauge>> gauges_;
  prometheus::Counter* reports_;
  prometheus::Counter* entries_;
  prometheus::Gauge* hot_keys_;
  std::array<prometheus::Gauge*, 3> by_source_{};  // by KeySource
  prometheus::Gauge* list_version_;
  prometheus::Counter* list_changes_;
  prometheus::Gauge* producers_;
  prometheus::Gauge* rate_;
  prometheus::Gauge* skew_;
  prometheus::Gauge* predicted_skew_;
  prometheus::Gauge* idle_ratio_;
  prometheus::Gauge* producer_version_oldest_;
  prometheus::Gauge* producer_version_newest_;
};

std::unique_ptr<TopicMetrics> Metrics::topic(const std::string& topic) {
  return std::make_unique<Topic>(*this, topic);
}

void Metrics::rejected(const std::string& reason) {
  rejected_.Add({{"reason", reason}}).Increment();
}

void Metrics::request_rejected(const std::string& reason, const std::string& scope) {
  requests_rejected_.Add({{"reason", reason}, {"scope", scope}}).Increment();
}

std::string Metrics::serialize() const {
  prometheus::TextSerializer serializer;
  return serializer.Serialize(registry_->Collect());
}

}  // namespace hotkey::coordinator
