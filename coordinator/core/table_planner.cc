#include "table_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "detector.h"
#include "hotkey/partitioner.h"
#include "hotkey/salt_planner.h"

namespace hotkey::coordinator {
namespace {

// `max_salts`: the topic's, or the key's policy's (which may be below min_salts: it wins).
uint32_t salt_count_for(double share, int32_t partitions, const TopicSettings& s,
                        uint32_t max_salts) {
  return salt_count_for_share(share, partitions, s.min_salts, max_salts, s.salt_share);
}

// Spreads `amount` over `table` by weight (or onto `home` when the table is empty).
void apply_traffic(std::vector<double>& load, const std::vector<SaltAssignment>& table,
                   int32_t home, double amount, double sign) {
  uint64_t sum = 0;
  for (const auto& s : table) sum += s.weight;
  if (table.empty() || sum == 0) {
    if (home >= 0 && static_cast<size_t>(home) < load.size()) {
      load[home] = std::max(0.0, load[home] + sign * amount);
    }
    return;
  }
  for (const auto& s : table) {
    if (s.partition < 0 || static_cast<size_t>(s.partition) >= load.size()) continue;
    double part = amount * static_cast<double>(s.weight) / static_cast<double>(sum);
    load[s.partition] = std::max(0.0, load[s.partition] + sign * part);
  }
}

const HotKey* find_key(const HotKeyList* list, const std::string& key) {
  if (!list) return nullptr;
  for (const auto& k : list->keys) {
    if (k.key == key) return &k;
  }
  return nullptr;
}

// Equal-weight table over the n least-loaded partitions the key can reach with a verified salt.
std::vector<SaltAssignment> least_loaded_table(const std::string& key, uint32_t n,
                                               const std::vector<double>& load,
                                               const SaltSpace& space) {
  std::vector<uint32_t> salt_of = salt_per_partition(key, space);
  std::vector<int32_t> reach;
  for (size_t p = 0; p < salt_of.size(); ++p) {
    if (salt_of[p] != std::numeric_limits<uint32_t>::max())
      reach.push_back(static_cast<int32_t>(p));
  }
  std::stable_sort(reach.begin(), reach.end(),
                   [&](int32_t a, int32_t b) { return load[a] < load[b]; });
  // Equal integer weights must stay positive: at most kWeightScale salts.
  const size_t keep = std::min<size_t>(n, kWeightScale);
  if (reach.size() > keep) reach.resize(keep);
  std::vector<SaltAssignment> out;
  if (reach.empty()) return out;
  uint32_t each = kWeightScale / static_cast<uint32_t>(reach.size());
  uint32_t rest = kWeightScale - each * static_cast<uint32_t>(reach.size());
  for (size_t i = 0; i < reach.size(); ++i) {
    out.push_back({salt_of[reach[i]], reach[i], each + (i == 0 ? rest : 0)});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.salt < b.salt; });
  return out;
}

bool same_partitions(const std::vector<SaltAssignment>& a, const std::vector<SaltAssignment>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].salt != b[i].salt || a[i].partition != b[i].partition) return false;
  }
  return true;
}

// How far above 1.0 the max/avg of `records` placed at random on P partitions typically
// reaches (max of P Gaussians ~ sqrt(2 ln P) standard deviations): a fresh plan fits that much
// sampling noise of the measured load, so an imbalance below it is no reason for a new version.
double sampling_noise(int32_t partitions, double records) {
  if (partitions <= 1 || !(records > 0)) return 0.0;
  const double p = static_cast<double>(partitions);
  return std::sqrt(2.0 * std::log(p)) * std::sqrt(p / records);
}

// eligible() (detector.h) on the key's traffic rather than its guaranteed count: the
// balance-driven selection sizes keys by traffic.
bool selectable(const PlanInput& in, const std::map<std::string, HotState>& hot, const Candidate& c,
                double traffic) {
  const double total = finite_nonneg(in.total);
  const double rate = total > 0 ? traffic / total * finite_nonneg(in.rate) : 0.0;
  return eligible(in, hot, c.item->key, traffic, rate);
}

// A producer's own key: in the latest reports of at most a quarter of the topic's producers
// (of two or more), at or above the hot threshold in them on average, but below it fleet-wide.
// A per-host or per-session key is 10% of its producer's records and 0.1% of a 100-producer
// fleet's: salting it levels a few percent of hash imbalance at the cost of the order of a
// key that was never hot, so the balance-driven selection leaves it alone (issue 26). A key
// of the fleet's tail that a report shows near the threshold by chance is not at it in that
// report, and a fleet-wide key is in most reports.
bool producers_own_key(const PlanInput& in, const std::string& key) {
  if (in.active_producers < 2 || !(in.latest_total > 0)) return false;
  auto it = in.latest.find(key);
  if (it == in.latest.end() || it->second.producers == 0) return false;
  const LatestCount& c = it->second;
  if (static_cast<size_t>(c.producers) * kOwnKeyProducers > in.active_producers) return false;
  const double per_report = in.latest_total / static_cast<double>(in.active_producers);
  const double hot_share = in.settings->hot_fraction / static_cast<double>(in.partitions);
  return c.guaranteed / static_cast<double>(c.producers) >= hot_share * per_report;
}

}  // namespace

PlanResult unplanned_result(const PlanInput& in) {
  PlanResult out;
  HotKeyList& list = out.list;
  list.topic = in.topic;
  list.partitions = in.partitions;
  list.hash = in.hash;
  list.separator = in.separator;
  list.updated_at_ms = in.now_ms;
  for (const auto& [key, d] : *in.denies) list.denied.push_back(key);
  list.never_salt = in.policies.never_salt_prefixes();
  return out;
}

PlanResult plan_tables(const PlanInput& in, KeyEstimates& est,
                       std::map<std::string, HotState>& hot) {
  PlanResult out = unplanned_result(in);
  HotKeyList& list = out.list;
  const TopicSettings& s = *in.settings;
  const auto& pins = *in.pins;
  const int32_t P = in.partitions;
  const double fair = 1.0 / P;
  const double topic_rate = est.topic_rate();
  const double load_units = est.load_units();
  const size_t cap_detected = detected_capacity(in);

  SaltSpace space;
  space.family = in.hash;
  space.partitions = P;
  space.separator = in.separator;
  space.search_limit = s.salt_search_limit;

  // 3. Cold load: the measured load less every salted key's records (by the tables it was
  // routed with), with the keys listed now also out of their home partitions and the keys
  // no longer listed back on theirs.
  out.measured_skew = skew_of(in.partition_load);
  {
    const auto& raw = in.partition_load;
    double sum = 0;
    for (double v : raw) sum += v;
    double avg = raw.empty() ? 0 : sum / static_cast<double>(raw.size());
    size_t idle = 0;
    for (double v : raw) idle += (v < 0.1 * avg || sum <= 0) ? 1 : 0;
    out.idle_ratio = raw.empty() ? 0 : static_cast<double>(idle) / static_cast<double>(raw.size());
  }
  const bool published_fits = in.published && in.published->partitions == P;
  std::vector<double> cold = in.cold_load;
  if (cold.size() != static_cast<size_t>(P)) cold.assign(P, 0.0);
  for (double& v : cold) v = finite_nonneg(v);
  auto planned = [&](const std::string& key) { return hot.contains(key) || pins.contains(key); };
  // max_balance_keys lowered (or 0: balance salting turned off): the smallest balance keys go.
  {
    std::vector<std::pair<double, std::string>> balance;
    for (const auto& [key, st] : hot) {
      if (st.balance) balance.emplace_back(est.guaranteed_of(key), key);
    }
    if (balance.size() > s.max_balance_keys) {
      std::sort(balance.begin(), balance.end());
      for (size_t i = 0; i < balance.size() - s.max_balance_keys; ++i) hot.erase(balance[i].second);
    }
  }
  for (const auto& [key, records] : in.salted) {
    if (!planned(key)) apply_traffic(cold, {}, est.home_of(key), records, 1.0);
  }
  auto subtract_routed = [&](const std::string& key) {
    double g = est.routed_of(key);
    if (g > 0) apply_traffic(cold, {}, est.home_of(key), g, -1.0);
  };
  // A key listed before every list behind the load was salted in all of its reports: what its
  // window traffic shows beyond the records taken out for it is the sketches' error (a small
  // key drops out of some reports' sketches, so less was taken out than it sent), not records
  // at home. Charging that to home made the planner see a partition holding two or three
  // balance-selected keys of Zipf 0.8 5-8% lighter than it is and fill it with salts
  // (tests/coordinator/coordinator_zipf_test.cc, 60 s runs).
  for (const auto& [key, st] : hot) {
    if (st.since_ms > in.oldest_list_ms) subtract_routed(key);
  }
  for (const auto& [key, pin] : pins) subtract_routed(key);
  shrink_sampling_noise(cold);
  // 4. Load-aware tables for detected keys and pins without an explicit salt count.
  std::vector<HotKeyDemand> demands;
  std::vector<KeySource> sources;
  // A pinned key takes the topic's salt cap (an exact pin wins over a prefix policy); the
  // others their policy's.
  auto salt_cap = [&](const std::string& key, KeySource src) {
    return src == KeySource::kPinned ? s.max_salts : in.policies.max_salts(key, s);
  };
  auto add_demand = [&](const std::string& key, KeySource src) {
    demands.push_back(
        HotKeyDemand{key, est.demand_of(key),
                     salt_count_for(est.traffic_share_of(key), P, s, salt_cap(key, src))});
    sources.push_back(src);
  };
  for (const auto& [key, pin] : pins) {
    if (pin.salts == 0 && est.guaranteed_of(key) > 0) add_demand(key, KeySource::kPinned);
  }
  for (const auto& [key, st] : hot) {
    add_demand(key, st.balance ? KeySource::kBalance : KeySource::kDetected);
  }
  std::vector<SaltTable> tables = plan_load_aware(cold, demands, space);
  std::vector<double> pred = predicted_load(cold, demands, tables);

  // 5. Balance-driven selection: while the predicted load is still skewed, salt the largest
  // key homed on the most loaded partition. A partition whose denied keys alone carry more than the
  // average load stays above it whatever is salted: it is no target (salting the cold keys homed
  // there cannot fix it).
  std::vector<double> denied(static_cast<size_t>(P), 0.0);
  for (const auto& [key, d] : *in.denies) {
    const int32_t h = est.home_of(key);
    if (h >= 0 && h < P) denied[static_cast<size_t>(h)] += est.routed_of(key);
  }
  // Keys under a never_salt policy stay home like denied ones. Only those large enough for the
  // selection to look at (its floor) can make a partition a lost cause.
  if (!in.policies.empty() && !in.policies.never_salt_prefixes().empty()) {
    const double floor_share = s.balance_min_fraction * fair;
    for (auto& c : est.ranked()) {
      if (c.share < floor_share) break;
      const std::string& key = c.item->key;
      if (pins.contains(key) || in.denies->contains(key) || !in.policies.never_salt(key)) continue;
      const int32_t h = est.home_of_candidate(c);
      if (h >= 0 && h < P) denied[static_cast<size_t>(h)] += est.routed_of(key);
    }
  }
  auto excluded = [&](const std::vector<double>& load) {
    double sum = 0;
    for (double v : load) sum += v;
    const double avg = sum / static_cast<double>(P);
    std::vector<bool> flags(static_cast<size_t>(P));
    for (size_t p = 0; p < flags.size(); ++p) flags[p] = denied[p] > avg;
    return flags;
  };
  auto target_skew = [&](const std::vector<double>& load, const std::vector<bool>& ex) {
    double sum = 0, mx = 0;
    size_t n = 0;
    for (size_t p = 0; p < load.size(); ++p) {
      if (ex[p]) continue;
      sum += load[p];
      mx = std::max(mx, load[p]);
      ++n;
    }
    return n > 0 && sum > 0 ? mx / (sum / static_cast<double>(n)) : 1.0;
  };
  // Not in a triggered plan: those are for surges, and a topic whose reports keep showing
  // locally hot keys runs several a second (each adding a key was a version every 0.5 s).
  size_t balance_keys = 0;
  for (const auto& [key, st] : hot) balance_keys += st.balance ? 1 : 0;
  if (in.detect && !in.triggered && load_units > 0 && balance_keys < s.max_balance_keys) {
    std::vector<bool> ex = excluded(pred);
    const double skew_before = target_skew(pred, ex);
    const size_t demands_before = demands.size();
    const std::vector<double> cold_before = cold;
    std::vector<std::string> added;
    while (hot.size() < cap_detected && balance_keys < s.max_balance_keys &&
           target_skew(pred, ex) > s.balance_target) {
      int32_t top = -1;
      for (int32_t p = 0; p < P; ++p) {
        if (!ex[p] && (top < 0 || pred[p] > pred[top])) top = p;
      }
      if (top < 0) break;
      // The largest key homed there by traffic (the midpoint of the sketch's bounds): a
      // key of a tail-heavy workload churns in and out of the producers' small sketches, so
      // its guaranteed count reads far below its traffic (a third of it at 0.25% share under
      // Zipf 0.8) and ranking by it ended the selection with keys left on the partition. Only
      // keys whose guaranteed count is at least kBalanceMinCertainty of their count: for the
      // rest the midpoint is mostly the sketch's error (three times the traffic near the
      // merged sketch's floor).
      const Candidate* pick = nullptr;
      double pick_traffic = 0;
      const double floor_traffic = s.balance_min_fraction * fair * est.total();
      for (auto& c : est.ranked()) {
        if (static_cast<double>(c.item->count) < floor_traffic) continue;
        const double traffic = KeyEstimates::traffic(*c.item);
        if (traffic < floor_traffic || traffic <= pick_traffic) continue;
        if (static_cast<double>(c.item->guaranteed()) <
            kBalanceMinCertainty * static_cast<double>(c.item->count)) {
          continue;
        }
        if (!selectable(in, hot, c, traffic)) continue;
        if (producers_own_key(in, c.item->key)) continue;
        if (est.home_of_candidate(c) == top) {
          pick = &c;
          pick_traffic = traffic;
        }
      }
      if (!pick) break;
      const std::string& key = pick->item->key;
      hot[key] = HotState{in.now_ms, -1, pick->share, true};
      added.push_back(key);
      ++balance_keys;
      cold[pick->home] = std::max(0.0, cold[pick->home] - est.routed_of(key));
      add_demand(key, KeySource::kBalance);
      tables = plan_load_aware(cold, demands, space);
      pred = predicted_load(cold, demands, tables);
      ex = excluded(pred);
    }
    // The keys are worth their order only when together they lower the predicted max/avg by
    // more than the measured load's sampling noise: below it the selection fits the noise of
    // this window (another partition looks heaviest in the next), and each plan salted one
    // more key for it.
    if (!added.empty() &&
        skew_before - target_skew(pred, ex) <= kBalanceNoiseShare * sampling_noise(P, load_units)) {
      for (const auto& key : added) hot.erase(key);
      demands.resize(demands_before);
      sources.resize(demands_before);
      cold = cold_before;
      tables = plan_load_aware(cold, demands, space);
      pred = predicted_load(cold, demands, tables);
    }
  }

  // Debt: the records a key detection listed sent home just before it was salted are on the
  // brokers; they stay in the load the tables level for as long as the window holds them
  // (kDebtLookbackMs), so home gets less of the salted keys' weight until the window has
  // balanced them out. At most the salted keys' mean load per partition each: more than home
  // can be spared. Keys the balance-driven selection added (below the hot threshold) owe
  // nothing, and the selection above levels the load to come, not the debt.
  if (load_units > 0 && !demands.empty()) {
    double salted_mean = 0;
    for (const auto& d : demands) salted_mean += finite_nonneg(d.rate);
    salted_mean /= static_cast<double>(P);
    std::vector<double> debt(static_cast<size_t>(P), 0.0);
    for (const auto& [key, st] : hot) {
      if (st.entry_share < hot_share_of(in, key) || !est.surging(key)) continue;
      const double owed = est.debt_of(key, st.since_ms);
      const int32_t h = est.home_of(key);
      if (owed > 0 && h >= 0 && h < P) debt[static_cast<size_t>(h)] += owed;
    }
    bool owed = false;
    for (size_t p = 0; p < cold.size(); ++p) {
      const double d = std::min(debt[p], salted_mean);
      owed = owed || d > 0;
      cold[p] += d;
    }
    if (owed) {
      tables = plan_load_aware(cold, demands, space);
      pred = predicted_load(cold, demands, tables);
    }
  }

  // Without load measured under the published list (just after a publish, before producers
  // report with it) keys already listed keep their tables rather than being re-planned blind,
  // and new keys get equal weights over as many partitions as their share asks for (below):
  // water-filling with no load to level would put a surge on one partition.
  if (!(load_units > 0)) {
    for (size_t i = 0; i < demands.size(); ++i) {
      const HotKey* pub = published_fits ? find_key(in.published, demands[i].key) : nullptr;
      if (pub) {
        tables[i].salts = pub->salts;
      } else {
        tables[i].salts.clear();
      }
    }
    pred = predicted_load(cold, demands, tables);
  }

  // 6. Explicit-count pins (and pins with no measured traffic): equal weights over the least
  // loaded reachable partitions; an unchanged pin keeps its published table.
  std::map<std::string, std::vector<SaltAssignment>> fixed;
  for (const auto& [key, pin] : pins) {
    if (pin.salts == 0 && est.guaranteed_of(key) > 0) continue;
    uint32_t n = pin.salts ? std::min<uint32_t>(pin.salts, static_cast<uint32_t>(P))
                           : salt_count_for(est.traffic_share_of(key), P, s, s.max_salts);
    const HotKey* pub = published_fits ? find_key(in.published, key) : nullptr;
    std::vector<SaltAssignment> table;
    if (pub && pub->source == KeySource::kPinned && pub->salts.size() == n) {
      table = pub->salts;
    } else {
      table = least_loaded_table(key, n, pred, space);
    }
    apply_traffic(pred, table, -1, est.demand_of(key), 1.0);
    fixed[key] = std::move(table);
  }
  // Demands whose water-filling gave no salt (zero traffic) fall back the same way.
  for (size_t i = 0; i < demands.size(); ++i) {
    if (tables[i].salts.empty()) {
      uint32_t n = salt_count_for(est.traffic_share_of(demands[i].key), P, s,
                                  salt_cap(demands[i].key, sources[i]));
      tables[i].salts = least_loaded_table(demands[i].key, n, pred, space);
    }
  }
  out.predicted_skew = skew_of(pred);

  // 7. The list: pinned keys first (by key), then detected and balance keys by share.
  auto make_key = [&](const std::string& key, KeySource src, std::vector<SaltAssignment> salts) {
    HotKey k;
    k.key = key;
    k.salts = std::move(salts);
    k.source = src;
    k.share = unit(est.current_share_of(key));
    k.rate = finite_nonneg(k.share * topic_rate);
    return k;
  };
  std::vector<HotKey> pinned_keys, detected_keys;
  for (const auto& [key, table] : fixed) {
    pinned_keys.push_back(make_key(key, KeySource::kPinned, table));
  }
  for (size_t i = 0; i < demands.size(); ++i) {
    auto& bucket = sources[i] == KeySource::kPinned ? pinned_keys : detected_keys;
    bucket.push_back(make_key(demands[i].key, sources[i], tables[i].salts));
  }
  std::sort(pinned_keys.begin(), pinned_keys.end(),
            [](const HotKey& a, const HotKey& b) { return a.key < b.key; });
  std::sort(detected_keys.begin(), detected_keys.end(), [](const HotKey& a, const HotKey& b) {
    return a.share != b.share ? a.share > b.share : a.key < b.key;
  });
  for (auto& k : pinned_keys) {
    if (!k.salts.empty()) list.keys.push_back(std::move(k));
  }
  for (auto& k : detected_keys) {
    if (!k.salts.empty()) list.keys.push_back(std::move(k));
  }

  // 8. Material change? Keys, sources, denies or partitions differ: yes. Same keys: keep the
  // published tables while they still balance about as well as the fresh plan (no churn).
  const HotKeyList* pub = in.published;
  if (!pub) {
    out.material = !list.keys.empty() || !list.denied.empty() || !list.never_salt.empty();
    return out;
  }
  if (pub->partitions != P || pub->hash != in.hash || pub->separator != in.separator ||
      pub->denied != list.denied || pub->never_salt != list.never_salt ||
      pub->keys.size() != list.keys.size()) {
    out.material = true;
    return out;
  }
  std::map<std::string, const HotKey*> old_keys;
  for (const auto& k : pub->keys) old_keys[k.key] = &k;
  bool tables_same = true;
  for (const auto& k : list.keys) {
    auto it = old_keys.find(k.key);
    if (it == old_keys.end() || it->second->source != k.source) {
      out.material = true;
      return out;
    }
    if (fixed.contains(k.key) && !same_partitions(it->second->salts, k.salts)) {
      out.material = true;  // an operator changed the pin's salt count
      return out;
    }
    if (!fixed.contains(k.key) && k.source != KeySource::kPinned &&
        it->second->salts.size() > in.policies.max_salts(k.key, s)) {
      out.material = true;  // a policy lowered the key's salt cap below its published table
      return out;
    }
    if (it->second->salts != k.salts) tables_same = false;
  }
  if (in.triggered) {
    out.material = false;  // same keys: the next regular tick refines the tables
    return out;
  }
  // Without load measured under the published list there is nothing to re-balance against.
  if (tables_same || in.load_scale <= 0) {
    out.material = false;
    return out;
  }
  std::vector<SaltTable> old_tables(demands.size());
  for (size_t i = 0; i < demands.size(); ++i) old_tables[i].salts = old_keys[demands[i].key]->salts;
  std::vector<double> old_pred = predicted_load(cold, demands, old_tables);
  for (const auto& [key, table] : fixed)
    apply_traffic(old_pred, table, -1, est.demand_of(key), 1.0);
  double old_skew = skew_of(old_pred);
  out.material = old_skew > std::max(s.balance_target, out.predicted_skew + s.churn_tolerance) +
                                kChurnNoiseShare * sampling_noise(P, load_units);
  return out;
}

}  // namespace hotkey::coordinator
