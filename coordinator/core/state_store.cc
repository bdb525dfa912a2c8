#include "state_store.h"

#include <limits>

namespace hotkey::coordinator {

ReportLimits list_invariant_limits() {
  ReportLimits limits;
  limits.max_items = std::numeric_limits<uint32_t>::max();
  limits.max_key_bytes = std::numeric_limits<uint32_t>::max();
  limits.max_partitions = std::numeric_limits<int32_t>::max();
  return limits;
}

void StoreBatch::put_list(const HotKeyList& list) {
  validate_list(list, list_invariant_limits());  // throws before anything is queued
  ops_.push_back(PutList{list});
}
void StoreBatch::put_topic_meta(const std::string& topic, const TopicMeta& meta) {
  ops_.push_back(PutTopicMeta{topic, meta});
}
void StoreBatch::put_pin(const std::string& topic, const Pin& pin) {
  ops_.push_back(PutPin{topic, pin});
}
void StoreBatch::delete_pin(const std::string& topic, const std::string& key) {
  ops_.push_back(DeletePin{topic, key});
}
void StoreBatch::put_deny(const std::string& topic, const Deny& deny) {
  ops_.push_back(PutDeny{topic, deny});
}
void StoreBatch::delete_deny(const std::string& topic, const std::string& key) {
  ops_.push_back(DeleteDeny{topic, key});
}
void StoreBatch::put_policy(const std::string& topic, const Policy& policy) {
  ops_.push_back(PutPolicy{topic, policy});
}
void StoreBatch::delete_policy(const std::string& topic, const std::string& prefix) {
  ops_.push_back(DeletePolicy{topic, prefix});
}
void StoreBatch::drop_topic(const std::string& topic, uint64_t version) {
  ops_.push_back(DropTopic{topic, version});
}

}  // namespace hotkey::coordinator
