#include "detector.h"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

namespace hotkey::coordinator {

size_t detected_capacity(const PlanInput& in) {
  const size_t pins = in.pins->size();
  return in.settings->max_hot_keys > pins ? in.settings->max_hot_keys - pins : 0;
}

bool eligible(const PlanInput& in, const std::map<std::string, HotState>& hot,
              const std::string& key, double records, double rate) {
  return !hot.contains(key) && !in.pins->contains(key) && !in.denies->contains(key) &&
         records > 0 && rate >= in.settings->min_rate && !in.policies.never_salt(key);
}

double hot_share_of(const PlanInput& in, const std::string& key) {
  return in.policies.hot_fraction(key, *in.settings) / static_cast<double>(in.partitions);
}

double exit_share_of(const PlanInput& in, const HotState& st) {
  const double fair = 1.0 / in.partitions;
  return std::min(in.settings->cold_fraction * fair, 0.5 * st.entry_share);
}

std::vector<std::string> idle_keys(const PlanInput& in, const KeyEstimates& est,
                                   const std::map<std::string, HotState>& hot) {
  std::vector<std::string> out;
  if (!in.detect || !est.has_recent()) return out;
  for (const auto& [key, st] : hot) {
    if (st.below_since_ms < 0) continue;
    if (est.recent_of(key).traffic < kIdleFraction * exit_share_of(in, st)) out.push_back(key);
  }
  return out;
}

void detect_hot_keys(const PlanInput& in, const KeyEstimates& est,
                     std::map<std::string, HotState>& hot) {
  const TopicSettings& s = *in.settings;
  const auto& pins = *in.pins;
  const auto& denies = *in.denies;
  const double fair = 1.0 / in.partitions;
  const size_t cap_detected = detected_capacity(in);

  // 1. Hysteresis: listed keys leave only after staying below their exit share for hold_ms.
  for (auto it = hot.begin(); it != hot.end();) {
    if (denies.contains(it->first) || pins.contains(it->first) ||
        in.policies.never_salt(it->first)) {
      it = hot.erase(it);
      continue;
    }
    if (in.detect) {
      double sh = est.share_of(it->first);
      if (sh >= exit_share_of(in, it->second)) {
        it->second.below_since_ms = -1;
      } else if (it->second.below_since_ms < 0) {
        it->second.below_since_ms = in.now_ms;
      }
      if (it->second.below_since_ms >= 0 && in.now_ms - it->second.below_since_ms >= s.hold_ms) {
        it = hot.erase(it);
        continue;
      }
    }
    ++it;
  }
  // Over the cap (settings changed, or pins took room): keep the detected keys, then the
  // largest.
  while (hot.size() > cap_detected) {
    auto smallest = hot.begin();
    for (auto it = hot.begin(); it != hot.end(); ++it) {
      const bool a = it->second.balance, b = smallest->second.balance;
      if (a != b ? a : est.guaranteed_of(it->first) < est.guaranteed_of(smallest->first)) {
        smallest = it;
      }
    }
    hot.erase(smallest);
  }
  // Room for one more detected key: a hot key takes the place of the smallest key the
  // balance-driven selection listed when the cap is reached.
  auto room = [&] {
    if (hot.size() < cap_detected) return true;
    auto smallest = hot.end();
    for (auto it = hot.begin(); it != hot.end(); ++it) {
      if (it->second.balance && (smallest == hot.end() || est.guaranteed_of(it->first) <
                                                              est.guaranteed_of(smallest->first))) {
        smallest = it;
      }
    }
    if (smallest == hot.end()) return false;
    hot.erase(smallest);
    return true;
  };

  // 2. Threshold entries, on guaranteed counts so sketch error never lists a key. Keys are
  // scanned down to the lowest threshold in force (a policy's may be below the topic's).
  const double min_hot_share = in.policies.min_hot_fraction(s) * fair;
  // A key the balance-driven selection listed that reaches the hot threshold (or a surge's) is
  // detected from then on: it keeps its place and takes the detected key's entry share.
  auto promote = [&](const std::string& key, double share) {
    auto it = hot.find(key);
    if (it == hot.end() || !it->second.balance) return it != hot.end();
    it->second.balance = false;
    it->second.entry_share = std::max(it->second.entry_share, share);
    it->second.below_since_ms = -1;
    return true;
  };
  if (in.detect) {
    for (const auto& c : est.ranked()) {
      if (c.share < min_hot_share) break;  // ranked by guaranteed count
      if (c.share < hot_share_of(in, c.item->key)) continue;
      if (promote(c.item->key, std::max(c.share, est.recent_of(c.item->key).share))) continue;
      if (!eligible(in, hot, c.item->key, static_cast<double>(c.item->guaranteed()), c.rate)) {
        continue;
      }
      if (!room()) break;
      hot[c.item->key] =
          HotState{in.now_ms, -1, std::max(c.share, est.recent_of(c.item->key).share)};
    }
  }
  // Fast entries: a key far above the threshold in the latest reports is a surge, listed now
  // rather than when its window share catches up (up to a window later for a key just over
  // the threshold). A brief spike below kFastEntryFactor waits for the window like before.
  if (in.detect || in.detect_fast) {
    const double bar = kFastEntryFactor * min_hot_share;
    const double recent_total = finite_nonneg(in.recent_total);
    std::vector<std::pair<double, std::string_view>> fresh;  // (guaranteed share, key)
    auto consider = [&](std::string_view key, double records) {
      const Candidate* c = est.find(key);
      if (!c || records < kFastEntryMinRecords) return;
      if (in.topic_age_ms < kFirstRoundMs) {
        auto it = in.latest.find(key);
        if (it == in.latest.end() || it->second.producers < 2) return;
      }
      const double r = est.recent_of(c->item->key).share;
      if (r >= kFastEntryFactor * hot_share_of(in, c->item->key)) fresh.emplace_back(r, key);
    };
    for (const auto& [key, c] : in.latest) consider(key, c.guaranteed);
    for (const auto& item : in.recent_items) {
      if (recent_total > 0 && static_cast<double>(item.guaranteed()) >= bar * recent_total) {
        consider(item.key, static_cast<double>(item.guaranteed()));
      }
    }
    std::sort(fresh.begin(), fresh.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (const auto& [r, key] : fresh) {
      const Candidate& c = *est.find(key);
      if (promote(c.item->key, std::max(r, c.share))) continue;
      // min_rate on the key's rate in the latest reports: its window rate (records over the
      // whole window) is a twentieth of that in a surge's first half second, and a key of 93
      // records at 16,000 records/s waited for its 100th (a plan later) under min_rate 10.
      if (!eligible(in, hot, c.item->key, static_cast<double>(c.item->guaranteed()),
                    r * est.topic_rate())) {
        continue;
      }
      if (!room()) break;
      hot[c.item->key] = HotState{in.now_ms, -1, std::max(r, c.share)};
    }
  }
}

}  // namespace hotkey::coordinator
