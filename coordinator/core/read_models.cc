// Read models: topic summaries, top keys, loads, pins and denies (each a TopicState view
// under the topic's lock), published lists.
#include "coordinator_topic.h"

#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace hotkey::coordinator {

std::vector<TopicSummary> Coordinator::topics() const {
  const std::vector<std::shared_ptr<Topic>> all = topics_->all();
  std::vector<TopicSummary> out;
  for (const auto& t : all) {
    TopicLock lock(*t);
    if (lock->removed()) continue;
    out.push_back(lock->summary(config_.settings_for(t->name())));
  }
  return out;
}

template <typename Read>
auto Coordinator::read_topic(const std::string& name, Read&& read) const
    -> std::optional<decltype(read(std::declval<TopicState&>()))> {
  std::shared_ptr<Topic> t = find_topic(name);
  if (!t) return std::nullopt;
  TopicLock lock(*t);
  if (lock->removed()) return std::nullopt;
  return read(*lock);
}

std::optional<TopicSummary> Coordinator::topic(const std::string& name) const {
  return read_topic(name, [&](TopicState& t) { return t.summary(config_.settings_for(t.name())); });
}

std::optional<std::vector<double>> Coordinator::partition_load(const std::string& name) const {
  return read_topic(name, [](TopicState& t) { return t.partition_load(); });
}

std::optional<std::vector<TopEntry>> Coordinator::top(const std::string& name, size_t n) {
  return read_topic(name, [&](TopicState& t) { return t.top(n, clock_.now_ms()); });
}

std::optional<std::vector<Rejection>> Coordinator::rejections(const std::string& name) const {
  return read_topic(name, [](TopicState& t) { return t.rejections(); });
}

std::optional<std::map<std::string, Pin>> Coordinator::pins(const std::string& name) const {
  return read_topic(name, [](TopicState& t) { return t.pins(); });
}

std::optional<Policies> Coordinator::policies(const std::string& name) const {
  return read_topic(name, [](TopicState& t) { return t.policies(); });
}

std::optional<std::map<std::string, Deny>> Coordinator::denies(const std::string& name) const {
  return read_topic(name, [](TopicState& t) { return t.denies(); });
}

std::shared_ptr<const PublishedList> Coordinator::current_list(const std::string& name) const {
  if (auto pub = board_.get(name)) return pub;
  HotKeyList empty;
  empty.topic = name;
  if (auto s = topic(name)) {
    empty.partitions = s->partitions;
    empty.hash = s->hash;
    empty.separator = s->separator;
  } else {
    const TopicSettings& ts = config_.settings_for(name);
    if (ts.hash) empty.hash = *ts.hash;
    if (ts.separator) empty.separator = *ts.separator;
  }
  std::string text = list_to_json(empty);
  return std::make_shared<const PublishedList>(PublishedList{std::move(empty), std::move(text)});
}

uint64_t Coordinator::list_version(const std::string& name) const {
  auto pub = board_.get(name);
  return pub ? pub->list.version : 0;
}

}  // namespace hotkey::coordinator
