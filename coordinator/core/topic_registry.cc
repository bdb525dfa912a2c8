// The topic registry (topic.h): the live topics by name, max_topics and the
// tracked-partitions budget.
#include "topic.h"

#include <algorithm>

namespace hotkey::coordinator {

void TopicRegistry::add(std::shared_ptr<Topic> t, int32_t partitions) {
  {
    TopicLock topic(*t);
    resize(topic, partitions, false);
  }
  std::unique_lock lock(mu_);
  std::string name = t->name();
  topics_.emplace(std::move(name), std::move(t));
}

std::shared_ptr<Topic> TopicRegistry::find(const std::string& name) const {
  std::shared_lock lock(mu_);
  auto it = topics_.find(name);
  if (it == topics_.end() || it->second->removed()) return nullptr;
  return it->second;
}

std::shared_ptr<Topic> TopicRegistry::get_or_create(
    const std::string& name, const std::function<std::shared_ptr<Topic>()>& make, bool* created) {
  *created = false;
  if (auto t = find(name)) return t;
  std::unique_lock lock(mu_);
  auto it = topics_.find(name);
  if (it != topics_.end()) {
    if (!it->second->removed()) return it->second;
    topics_.erase(it);  // dropped; its remover erases it too when it gets here first
  }
  if (topics_.size() >= max_topics_) return nullptr;
  std::shared_ptr<Topic> t = make();
  topics_.emplace(name, t);
  *created = true;
  return t;
}

std::vector<std::shared_ptr<Topic>> TopicRegistry::all() const {
  std::vector<std::shared_ptr<Topic>> out;
  std::shared_lock lock(mu_);
  out.reserve(topics_.size());
  for (const auto& [name, t] : topics_) out.push_back(t);
  return out;
}

bool TopicRegistry::resize(TopicLock& t, int32_t partitions, bool enforce) {
  const uint64_t now = static_cast<uint64_t>(std::max(t->partitions_, 0));
  const uint64_t want = static_cast<uint64_t>(std::max(partitions, 0));
  if (want > now) {
    uint64_t tracked = tracked_partitions_.load();
    do {
      if (enforce && tracked + (want - now) > max_tracked_partitions_) return false;
    } while (!tracked_partitions_.compare_exchange_weak(tracked, tracked + (want - now)));
  } else {
    tracked_partitions_ -= now - want;
  }
  t->partitions_ = partitions;
  return true;
}

void TopicRegistry::erase(const std::shared_ptr<Topic>& t) {
  std::unique_lock lock(mu_);
  auto it = topics_.find(t->name());
  if (it != topics_.end() && it->second == t) topics_.erase(it);
}

void TopicRegistry::erase_if(const std::shared_ptr<Topic>& t,
                             const std::function<bool(TopicLock&)>& drop) {
  std::unique_lock lock(mu_);
  TopicLock topic_lock(*t);
  auto it = topics_.find(t->name());
  if (it == topics_.end() || it->second != t) return;
  if (drop(topic_lock)) topics_.erase(it);
}

}  // namespace hotkey::coordinator
