#include "report_relay.h"

#include <algorithm>
#include <chrono>
#include <string_view>

#include "hotkey/report.h"
#include "kafka_io.h"

namespace hotkey::coordinator::kafka {
namespace {
// A report forwarded to the reports topic (HTTP to a non-owner) waits this long for Kafka.
constexpr auto kReportAckTimeout = std::chrono::seconds(5);
}  // namespace

CallResult ReportRelay::forward(const Report& r, std::string_view wire) {
  const std::string encoded = wire.empty() ? encode_report_binary(r) : std::string();
  const Sent sent = produce_and_wait(producer_, config_.cluster.reports_topic,
                                     topic_partition(r.topic, partitions_), r.topic,
                                     wire.empty() ? std::string_view(encoded) : wire,
                                     kReportVersionHeader, kReportVersion, kReportAckTimeout);
  CallResult res;
  if (!sent.ok()) {
    res.status = Status::kUnavailable;
    res.reason = "reports_topic";
    if (sent.produced != RD_KAFKA_RESP_ERR_NO_ERROR) {
      res.error = std::string("cannot forward the report to the reports topic: ") +
                  rd_kafka_err2str(sent.produced);
    } else if (!sent.acked) {
      res.error = "the reports topic did not acknowledge the forwarded report in time";
    } else {
      res.error = std::string("the reports topic refused the forwarded report: ") +
                  rd_kafka_err2str(sent.err);
    }
    return res;
  }
  forwarded_.fetch_add(1);
  return res;
}

void ReportRelay::note_deleted(const std::string& topic, int64_t at_ms) {
  std::lock_guard lock(deleted_at_mu_);
  int64_t& at = deleted_at_[topic];
  at = std::max(at, at_ms);
}

bool ReportRelay::reported_before_delete(const std::string& topic, const rd_kafka_message_t* m) {
  rd_kafka_timestamp_type_t type;
  const int64_t ts = rd_kafka_message_timestamp(m, &type);
  if (ts < 0) return false;
  std::lock_guard lock(deleted_at_mu_);
  auto it = deleted_at_.find(topic);
  if (it == deleted_at_.end()) {
    if (deleted_at_.size() >= 100000) deleted_at_.clear();  // topic names are unbounded
    int64_t at = 0;
    ownership_.deleted_version(topic, &at);
    it = deleted_at_.emplace(topic, at).first;
  }
  return ts <= it->second;
}

void ReportRelay::ingest(const rd_kafka_message_t* m) {
  if (auto v = header(m, kReportVersionHeader); v && *v != kReportVersion) {
    skipped_.fetch_add(1);
    return;
  }
  if (!m->payload) {
    skipped_.fetch_add(1);
    return;
  }
  Report r;
  try {
    r = decode_report_binary(std::string_view(static_cast<const char*>(m->payload), m->len),
                             config_.limits);
  } catch (const std::exception&) {
    skipped_.fetch_add(1);
    return;
  }
  // A report keyed or partitioned against the contract would feed a topic another member
  // owns.
  if (topic_partition(r.topic, partitions_) != m->partition) {
    skipped_.fetch_add(1);
    return;
  }
  if (reported_before_delete(r.topic, m)) {
    skipped_.fetch_add(1);
    return;
  }
  CallResult res = reports_.ingest(std::move(r));
  if (res.ok()) {
    ingested_.fetch_add(1);
  } else {
    skipped_.fetch_add(1);
  }
}

}  // namespace hotkey::coordinator::kafka
