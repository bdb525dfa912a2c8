// The samplers of one client's topics, indexed by TopicId: the send path (Client::record) and
// the reporter look one up with a single acquire load; topics add theirs once.
//
// get() is safe from any thread; add() calls must be serialized by the caller (Client::topic
// holds its topics lock). Samplers live as long as the set.
#pragma once

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "hotkey/client/router.h"
#include "hotkey/client/sampler.h"

namespace hotkey::client::detail {

class SamplerSet {
 public:
  // The sampler of topic `id` (< Router::kMaxTopics), or null before add().
  Sampler* get(TopicId id) const noexcept { return by_id_[id].load(std::memory_order_acquire); }

  // Makes `sampler` topic `id`'s (which has none yet) and returns it.
  Sampler* add(TopicId id, std::unique_ptr<Sampler> sampler) {
    owned_.push_back(std::move(sampler));
    Sampler* raw = owned_.back().get();
    by_id_[id].store(raw, std::memory_order_release);
    return raw;
  }

 private:
  std::vector<std::unique_ptr<Sampler>> owned_;  // guarded by the caller of add()
  std::atomic<Sampler*> by_id_[Router::kMaxTopics] = {};
};

}  // namespace hotkey::client::detail
