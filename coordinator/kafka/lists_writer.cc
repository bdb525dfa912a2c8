#include "lists_writer.h"

#include <algorithm>
#include <mutex>

#include "kafka_io.h"

namespace hotkey::coordinator::kafka {

int32_t ListsWriter::partition_of(const std::string& topic) const {
  return topic_partition(topic, partitions_);
}

bool ListsWriter::owns(const std::string& topic) const {
  const int32_t p = partition_of(topic);
  std::shared_lock lock(mu_);
  return owned_.contains(p);
}

uint64_t ListsWriter::version_floor(const std::string& topic) const {
  const int32_t p = partition_of(topic);
  std::shared_lock lock(mu_);
  auto it = owned_.find(p);
  return it == owned_.end() ? 0 : epoch_floor(it->second);
}

void ListsWriter::own(int32_t p, uint64_t epoch) {
  std::unique_lock lock(mu_);
  owned_[p] = epoch;
}

void ListsWriter::disown(const std::vector<int32_t>& parts) {
  std::unique_lock lock(mu_);
  for (int32_t p : parts) owned_.erase(p);
}

std::map<int32_t, uint64_t> ListsWriter::owned() const {
  std::shared_lock lock(mu_);
  return owned_;
}

uint64_t ListsWriter::deleted_version(const std::string& topic) const {
  std::shared_lock lock(mu_);
  auto d = deleted_.find(topic);
  return d == deleted_.end() ? 0 : d->second;
}

void ListsWriter::publish(const std::shared_ptr<const PublishedList>& list) {
  const int32_t p = partition_of(list->list.topic);
  std::shared_lock lock(mu_);
  auto it = owned_.find(p);
  // Not ours (any more), or issued before this ownership began: never written.
  if (it == owned_.end() || version_epoch(list->list.version) != it->second) {
    dropped_.fetch_add(1);
    return;
  }
  // A list of a deleted topic (a republish that took it before the delete): never written
  // after the tombstone.
  if (auto d = deleted_.find(list->list.topic);
      d != deleted_.end() && list->list.version <= d->second) {
    dropped_.fetch_add(1);
    return;
  }
  const std::string& topic = list->list.topic;
  const std::string& value = list->json;
  for (int attempt = 0; attempt < 50; ++attempt) {
    rd_kafka_resp_err_t err =
        rd_kafka_producev(producer_, RD_KAFKA_V_TOPIC(cc_.lists_topic.c_str()),
                          RD_KAFKA_V_PARTITION(p), RD_KAFKA_V_KEY(topic.data(), topic.size()),
                          RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_HEADER(kMemberHeader.data(), member_url_.data(),
                                            static_cast<ssize_t>(member_url_.size())),
                          RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      produced_.fetch_add(1);
      return;
    }
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      log_now(log_, {{"level", "error"},
                {"event", "list_produce_failed"},
                {"topic", topic},
                {"error", rd_kafka_err2str(err)}});
      break;
    }
    rd_kafka_poll(producer_, 10);
  }
  // The next republish writes it again.
  dropped_.fetch_add(1);
}

void ListsWriter::tombstone(const std::string& topic, uint64_t version) {
  const int32_t p = partition_of(topic);
  std::unique_lock lock(mu_);
  uint64_t& d = deleted_[topic];
  d = std::max(d, version);
  if (!owned_.contains(p)) return;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__QUEUE_FULL;
  for (int attempt = 0; attempt < 50 && err == RD_KAFKA_RESP_ERR__QUEUE_FULL; ++attempt) {
    err = rd_kafka_producev(producer_, RD_KAFKA_V_TOPIC(cc_.lists_topic.c_str()),
                            RD_KAFKA_V_PARTITION(p), RD_KAFKA_V_KEY(topic.data(), topic.size()),
                            RD_KAFKA_V_VALUE(nullptr, 0),
                            RD_KAFKA_V_HEADER(kMemberHeader.data(), member_url_.data(),
                                              static_cast<ssize_t>(member_url_.size())),
                            RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) rd_kafka_poll(producer_, 10);
  }
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) tombstoned_.fetch_add(1);
  log_now(log_, {{"level", err == RD_KAFKA_RESP_ERR_NO_ERROR ? "info" : "error"},
            {"event", "list_tombstoned"},
            {"topic", topic},
            {"partition", p},
            {"version", version},
            {"error", err == RD_KAFKA_RESP_ERR_NO_ERROR ? "" : rd_kafka_err2str(err)}});
}

}  // namespace hotkey::coordinator::kafka
