// Read models: topic summaries, top keys, loads, pins and denies, published lists.
#include "coordinator_topic.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include "hotkey/key_codec.h"

namespace hotkey::coordinator {

namespace {
// The configured hash/separator win over what reports or the store brought (they are what
// planning uses); then the first report's; then the defaults.
TopicSummary summary_of(const std::string& name, const TopicSettings& settings, int32_t partitions,
                        const std::optional<HashFamily>& hash,
                        const std::optional<std::string>& separator, const TopicSummary& stats,
                        size_t producers, const std::shared_ptr<const PublishedList>& pub,
                        size_t pins, size_t denies, size_t policies) {
  TopicSummary s = stats;
  s.topic = name;
  s.partitions = partitions;
  s.hash = settings.hash ? *settings.hash : hash.value_or(HashFamily::kMurmur2);
  s.hash_source = settings.hash ? "config" : hash ? "reports" : "default";
  s.separator =
      settings.separator ? *settings.separator : separator.value_or(std::string(kDefaultSeparator));
  s.separator_source = settings.separator ? "config" : separator ? "reports" : "default";
  s.producers = static_cast<uint32_t>(producers);
  s.version = pub ? pub->list.version : 0;
  s.hot_keys = pub ? static_cast<uint32_t>(pub->list.keys.size()) : 0;
  s.balance_keys = 0;
  if (pub) {
    for (const auto& k : pub->list.keys) s.balance_keys += k.source == KeySource::kBalance ? 1 : 0;
  }
  s.pins = static_cast<uint32_t>(pins);
  s.denies = static_cast<uint32_t>(denies);
  s.policies = static_cast<uint32_t>(policies);
  return s;
}
}  // namespace

std::vector<TopicSummary> Coordinator::topics() const {
  const std::vector<std::shared_ptr<Topic>> all = topics_->all();
  std::vector<TopicSummary> out;
  for (const auto& t : all) {
    TopicLock lock(*t);
    if (t->removed.load()) continue;
    out.push_back(summary_of(t->name, config_.settings_for(t->name), t->partitions, t->hash,
                             t->separator, t->stats, t->producers.size(), t->published,
                             t->pins.size(), t->denies.size(), t->policies.size()));
  }
  return out;
}

std::optional<TopicSummary> Coordinator::topic(const std::string& name) const {
  std::shared_ptr<Topic> t = find_topic(name);
  if (!t) return std::nullopt;
  TopicLock lock(*t);
  if (t->removed.load()) return std::nullopt;
  return summary_of(t->name, config_.settings_for(t->name), t->partitions, t->hash, t->separator,
                    t->stats, t->producers.size(), t->published, t->pins.size(), t->denies.size(),
                    t->policies.size());
}

std::optional<std::vector<double>> Coordinator::partition_load(const std::string& name) const {
  std::shared_ptr<Topic> t = find_topic(name);
  if (!t) return std::nullopt;
  TopicLock lock(*t);
  if (t->removed.load()) return std::nullopt;
  return t->partition_load;
}

std::optional<std::vector<TopEntry>> Coordinator::top(const std::string& name, size_t n) {
  std::shared_ptr<Topic> t = find_topic(name);
  if (!t) return std::nullopt;
  TopicLock lock(*t);
  if (t->removed.load()) return std::nullopt;
  TopicWindow::Snapshot snap = t->window.snapshot(clock_.now_ms());
  double rate = 0;
  for (const auto& [id, p] : t->producers) rate += p.rate;
  std::vector<TopEntry> out;
  std::map<std::string, KeySource> listed;
  if (t->published) {
    for (const auto& k : t->published->list.keys) listed.emplace(k.key, k.source);
  }
  for (const auto& item : snap.sketch.top(n)) {
    TopEntry e;
    e.key = item.key;
    e.count = item.count;
    e.error = item.error;
    e.share = snap.total > 0 ? static_cast<double>(item.guaranteed()) / snap.total : 0;
    e.rate = e.share * rate;
    e.partition = t->partitions > 0 ? partition_for(t->hash.value_or(HashFamily::kMurmur2),
                                                    item.key, t->partitions)
                                    : -1;
    if (auto it = listed.find(item.key); it != listed.end()) {
      e.hot = true;
      e.source = std::string(to_string(it->second));
    }
    e.pinned = t->pins.contains(item.key);
    e.denied = t->denies.contains(item.key);
    e.never_salt = !e.pinned && !e.denied && t->policy_index.never_salt(item.key);
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<std::vector<Rejection>> Coordinator::rejections(const std::string& name) const {
  std::shared_ptr<Topic> t = find_topic(name);
  if (!t) return std::nullopt;
  TopicLock lock(*t);
  if (t->removed.load()) return std::nullopt;
  std::vector<Rejection> out;
  for (const auto& [key, r] : t->rejections) out.push_back(r);
  return out;
}

std::optional<std::map<std::string, Pin>> Coordinator::pins(const std::string& name) const {
  std::shared_ptr<Topic> t = find_topic(name);
  if (!t) return std::nullopt;
  TopicLock lock(*t);
  if (t->removed.load()) return std::nullopt;
  return t->pins;
}

std::optional<Policies> Coordinator::policies(const std::string& name) const {
  std::shared_ptr<Topic> t = find_topic(name);
  if (!t) return std::nullopt;
  TopicLock lock(*t);
  if (t->removed.load()) return std::nullopt;
  return t->policies;
}

std::optional<std::map<std::string, Deny>> Coordinator::denies(const std::string& name) const {
  std::shared_ptr<Topic> t = find_topic(name);
  if (!t) return std::nullopt;
  TopicLock lock(*t);
  if (t->removed.load()) return std::nullopt;
  return t->denies;
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
