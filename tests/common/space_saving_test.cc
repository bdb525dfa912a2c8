// Space-Saving against exact counts kept alongside generated streams (Zipf and adversarial),
// merges of many "producer" sketches of one partitioned stream, and the binary decoder fed
// every truncation and random corruptions of valid bytes.
#include "hotkey/space_saving.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

namespace hotkey {
namespace {

struct Update {
  std::string key;
  uint64_t weight;
};
using Stream = std::vector<Update>;
using Exact = std::unordered_map<std::string, uint64_t>;

std::string key_name(uint64_t i) { return "k" + std::to_string(i); }

// Zipf(s) over `universe` keys; key ids are shuffled so rank is not key order.
Stream zipf_stream(double s, size_t universe, size_t n, uint64_t seed, uint64_t max_weight = 1) {
  std::mt19937_64 rng(seed);
  std::vector<double> cdf(universe);
  double acc = 0;
  for (size_t i = 0; i < universe; ++i) {
    acc += 1.0 / std::pow(static_cast<double>(i + 1), s);
    cdf[i] = acc;
  }
  std::vector<uint64_t> ids(universe);
  for (size_t i = 0; i < universe; ++i) ids[i] = i;
  std::shuffle(ids.begin(), ids.end(), rng);
  std::uniform_real_distribution<double> u(0, acc);
  std::uniform_int_distribution<uint64_t> w(1, max_weight);
  Stream out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    size_t r = static_cast<size_t>(std::upper_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin());
    r = std::min(r, universe - 1);
    out.push_back({key_name(ids[r]), w(rng)});
  }
  return out;
}

Stream distinct_stream(size_t n) {
  Stream out;
  for (size_t i = 0; i < n; ++i) out.push_back({key_name(i), 1});
  return out;
}

// Runs of increasing length, in key order: each new run evicts the previous minimum.
Stream sorted_runs(size_t keys) {
  Stream out;
  for (size_t i = 0; i < keys; ++i) {
    for (size_t j = 0; j <= i % 40; ++j) out.push_back({key_name(i), 1});
  }
  return out;
}

// Many distinct keys first, then one key that becomes the heaviest.
Stream late_heavy_hitter(size_t noise, size_t heavy) {
  Stream out = distinct_stream(noise);
  for (size_t i = 0; i < heavy; ++i) out.push_back({"late-heavy", 1});
  return out;
}

// Every key the same count, round-robin: all ties.
Stream all_ties(size_t keys, size_t rounds) {
  Stream out;
  for (size_t r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < keys; ++i) out.push_back({key_name(i), 1});
  }
  return out;
}

Exact exact_of(const Stream& s) {
  Exact e;
  for (const auto& u : s) e[u.key] += u.weight;
  return e;
}

uint64_t total_of(const Stream& s) {
  uint64_t t = 0;
  for (const auto& u : s) t += u.weight;
  return t;
}

SpaceSaving sketch_of(const Stream& s, uint32_t k) {
  SpaceSaving ss(k);
  for (const auto& u : s) ss.update(u.key, u.weight);
  return ss;
}

// The Space-Saving guarantees against exact counts, with N the sketch's total.
void expect_bounds(const SpaceSaving& ss, const Exact& exact, uint64_t n, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(ss.total(), n);
  ASSERT_LE(ss.size(), ss.capacity());
  const uint64_t k = ss.capacity();
  EXPECT_LE(ss.min_count() * k, n) << "min_count exceeds N/k";
  auto items = ss.items();
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& it = items[i];
    auto f = exact.find(it.key);
    const uint64_t truth = f == exact.end() ? 0 : f->second;
    ASSERT_LE(it.error, it.count);
    EXPECT_LE(it.count - it.error, truth) << "lower bound broken for " << it.key;
    EXPECT_GE(it.count, truth) << "upper bound broken for " << it.key;
    if (i > 0) {
      const auto& p = items[i - 1];
      EXPECT_TRUE(p.count > it.count || (p.count == it.count && p.key < it.key));
    }
  }
  for (const auto& [key, truth] : exact) {
    if (truth * k > n) {
      EXPECT_TRUE(ss.find(key).has_value()) << key << " (true " << truth << ") not monitored";
    }
    if (!ss.find(key)) {
      EXPECT_LE(truth, ss.min_count());
    }
    EXPECT_GE(ss.estimate(key), truth);
  }
}

struct Case {
  std::string name;
  Stream stream;
};

std::vector<Case> property_cases() {
  std::vector<Case> cases;
  uint64_t seed = 1;
  for (double s : {0.8, 1.0, 1.2, 1.5}) {
    cases.push_back({"zipf" + std::to_string(s), zipf_stream(s, 4000, 12000, seed++)});
    cases.push_back({"zipf-weighted" + std::to_string(s), zipf_stream(s, 2000, 5000, seed++, 20)});
  }
  cases.push_back({"distinct", distinct_stream(4000)});
  cases.push_back({"sorted-runs", sorted_runs(1500)});
  cases.push_back({"late-heavy-hitter", late_heavy_hitter(4000, 200)});
  cases.push_back({"all-ties", all_ties(500, 6)});
  return cases;
}

TEST(SpaceSaving, BoundsHoldOnGeneratedStreams) {
  for (const auto& c : property_cases()) {
    const Exact exact = exact_of(c.stream);
    const uint64_t n = total_of(c.stream);
    for (uint32_t k : {1u, 7u, 64u, 256u}) {
      expect_bounds(sketch_of(c.stream, k), exact, n, c.name + " k=" + std::to_string(k));
    }
  }
}

TEST(SpaceSaving, LateHeavyHitterIsFound) {
  auto s = late_heavy_hitter(6000, 300);
  auto ss = sketch_of(s, 64);
  auto top = ss.top(1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].key, "late-heavy");
  EXPECT_GE(top[0].guaranteed(), 1u);
}

TEST(SpaceSaving, ExactWhileNotFull) {
  auto s = zipf_stream(1.0, 50, 3000, 99, 5);
  auto exact = exact_of(s);
  auto ss = sketch_of(s, 64);
  EXPECT_EQ(ss.size(), exact.size());
  EXPECT_EQ(ss.min_count(), 0u);
  for (const auto& it : ss.items()) {
    EXPECT_EQ(it.count, exact.at(it.key));
    EXPECT_EQ(it.error, 0u);
  }
}

// update_and_get returns the entry find() sees right after the update, on every path (found,
// inserted while not full, replacing the minimum), and one hash per key.
TEST(SpaceSaving, UpdateAndGetMatchesFind) {
  SpaceSaving s(8);
  std::mt19937 rng(7);
  std::map<std::string, uint64_t> hashes;
  for (int i = 0; i < 5000; ++i) {
    std::string key = "k" + std::to_string(rng() % (i % 3 == 0 ? 4 : 40));
    uint64_t w = 1 + rng() % 3;
    SpaceSaving::Updated u = s.update_and_get(key, w);
    auto item = s.find(key);
    ASSERT_TRUE(item.has_value());
    EXPECT_EQ(u.count, item->count);
    EXPECT_EQ(u.error, item->error);
    auto [it, fresh] = hashes.emplace(key, u.hash);
    if (!fresh) {
      EXPECT_EQ(it->second, u.hash);
    }
  }
  EXPECT_EQ(s.update_and_get("k1", 0).count, 0u);
}

TEST(SpaceSaving, BasicOperations) {
  EXPECT_THROW(SpaceSaving(0), std::invalid_argument);
  EXPECT_THROW(SpaceSaving(SpaceSaving::kMaxCapacity + 1), std::invalid_argument);
  SpaceSaving ss(3);
  EXPECT_TRUE(ss.empty());
  ss.update("a", 5);
  ss.update("b", 2);
  ss.update("c", 0);  // ignored
  EXPECT_EQ(ss.size(), 2u);
  EXPECT_EQ(ss.total(), 7u);
  ss.update("c");
  ss.update(std::string("bin\0key", 7), 4);  // full now; evicts c (count 1)
  EXPECT_EQ(ss.size(), 3u);
  EXPECT_EQ(ss.min_count(), 2u);
  auto bin = ss.find(std::string("bin\0key", 7));
  ASSERT_TRUE(bin.has_value());
  EXPECT_EQ(bin->count, 5u);
  EXPECT_EQ(bin->error, 1u);
  EXPECT_EQ(bin->guaranteed(), 4u);
  EXPECT_FALSE(ss.find("c").has_value());
  EXPECT_FALSE(ss.find("bin").has_value());
  EXPECT_EQ(ss.estimate("never"), 2u);
  auto items = ss.items();
  ASSERT_EQ(items.size(), 3u);
  // Ties by key bytes ascending: "a" < "bin\0key".
  EXPECT_EQ(items[0].key, "a");
  EXPECT_EQ(items[1].key, std::string("bin\0key", 7));
  EXPECT_EQ(items[2].key, "b");
  EXPECT_EQ(ss.top(2), std::vector<SpaceSaving::Item>(items.begin(), items.begin() + 2));
  EXPECT_EQ(ss.top(100).size(), 3u);

  // Long keys (beyond small-string storage) replace short ones and back.
  std::string long_key(300, 'x');
  ss.update(long_key, 10);
  EXPECT_EQ(ss.find(long_key)->count, 12u);
  ss.update("", 20);
  EXPECT_TRUE(ss.find("").has_value());

  SpaceSaving copy = ss;
  EXPECT_EQ(copy, ss);
  copy.update("a");
  EXPECT_FALSE(copy == ss);
  SpaceSaving moved = std::move(copy);
  EXPECT_EQ(moved.find("a")->count, 6u);
  copy = ss;  // a moved-from sketch can be assigned again
  EXPECT_EQ(copy, ss);

  ss.clear();
  EXPECT_TRUE(ss.empty());
  EXPECT_EQ(ss.total(), 0u);
  EXPECT_EQ(ss.capacity(), 3u);
  EXPECT_FALSE(ss.find("a").has_value());
  ss.update("z");
  EXPECT_EQ(ss.items().size(), 1u);
}

TEST(SpaceSaving, ManyKeysThroughSmallIndexStayFindable) {
  // Churn through a full sketch so index deletions (backward shift) are exercised heavily.
  SpaceSaving ss(100);
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20000; ++i) ss.update(key_name(rng() % 400), 1 + rng() % 3);
  for (const auto& it : ss.items()) {
    auto f = ss.find(it.key);
    ASSERT_TRUE(f.has_value()) << it.key;
    EXPECT_EQ(*f, it);
  }
  EXPECT_EQ(ss.size(), 100u);
}

// Splits a stream across `producers` at random, like a fleet sending the same topic.
std::vector<Stream> split(const Stream& s, size_t producers, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Stream> parts(producers);
  for (const auto& u : s) parts[rng() % producers].push_back(u);
  return parts;
}

TEST(SpaceSaving, MergesOfManyProducersKeepBounds) {
  const uint32_t k = 64;
  std::vector<Case> cases;
  cases.push_back({"zipf0.8", zipf_stream(0.8, 3000, 16000, 11)});
  cases.push_back({"zipf1.2-weighted", zipf_stream(1.2, 3000, 8000, 12, 9)});
  cases.push_back({"all-ties", all_ties(400, 12)});
  cases.push_back({"late-heavy", late_heavy_hitter(5000, 1200)});
  for (const auto& c : cases) {
    const Exact exact = exact_of(c.stream);
    const uint64_t n = total_of(c.stream);
    for (size_t producers : {2u, 5u, 31u, 200u}) {
      auto parts = split(c.stream, producers, producers);
      std::vector<SpaceSaving> sketches;
      for (const auto& p : parts) sketches.push_back(sketch_of(p, k));
      std::vector<const SpaceSaving*> ptrs;
      for (const auto& s : sketches) ptrs.push_back(&s);
      const std::string what = c.name + " producers=" + std::to_string(producers);

      auto all = SpaceSaving::merge_all(ptrs, k);
      EXPECT_EQ(all.capacity(), k);
      expect_bounds(all, exact, n, what + " merge_all");

      SpaceSaving folded(k);
      for (const auto& s : sketches) folded.merge(s);
      expect_bounds(folded, exact, n, what + " pairwise fold");

      // Tree of merges (merge of merges), as coordinators combining windows would.
      std::vector<SpaceSaving> level = sketches;
      while (level.size() > 1) {
        std::vector<SpaceSaving> next;
        for (size_t i = 0; i + 1 < level.size(); i += 2) {
          next.push_back(level[i]);
          next.back().merge(level[i + 1]);
        }
        if (level.size() % 2) next.push_back(level.back());
        level = std::move(next);
      }
      expect_bounds(level[0], exact, n, what + " tree");

      // A smaller result capacity still keeps the bounds for its own k.
      expect_bounds(SpaceSaving::merge_all(ptrs, 16), exact, n, what + " merge_all k=16");
    }
  }
}

TEST(SpaceSaving, MergeAllIsPermutationInvariant) {
  auto stream = zipf_stream(1.0, 3000, 20000, 21);
  auto parts = split(stream, 12, 3);
  std::vector<SpaceSaving> sketches;
  // Mixed capacities and fill levels: some parts not full (min 0), some full.
  for (size_t i = 0; i < parts.size(); ++i) {
    sketches.push_back(sketch_of(parts[i], i % 3 == 0 ? 4096 : 32 + static_cast<uint32_t>(i)));
  }
  std::vector<const SpaceSaving*> ptrs;
  for (const auto& s : sketches) ptrs.push_back(&s);
  ptrs.push_back(nullptr);
  const auto reference = SpaceSaving::merge_all(ptrs, 50);
  const auto reference_bytes = reference.serialize();
  std::mt19937_64 rng(8);
  for (int i = 0; i < 40; ++i) {
    std::shuffle(ptrs.begin(), ptrs.end(), rng);
    auto m = SpaceSaving::merge_all(ptrs, 50);
    EXPECT_EQ(m, reference);
    EXPECT_EQ(m.serialize(), reference_bytes);
  }
}

TEST(SpaceSaving, PairwiseMergeIsCommutativeAndMatchesMergeAll) {
  for (uint64_t seed = 0; seed < 10; ++seed) {
    auto a = sketch_of(zipf_stream(1.1, 500, 3000, seed, 3), 40);
    auto b = sketch_of(seed % 2 ? all_ties(30, 3) : zipf_stream(0.9, 500, 2000, seed + 100), 40);
    SpaceSaving ab = a;
    ab.merge(b);
    SpaceSaving ba = b;
    ba.merge(a);
    EXPECT_EQ(ab, ba);
    EXPECT_EQ(ab.serialize(), ba.serialize());
    const SpaceSaving* both[] = {&a, &b};
    EXPECT_EQ(SpaceSaving::merge_all(both, 40), ab);
  }
  // The result keeps this side's capacity.
  SpaceSaving small(4);
  SpaceSaving big(100);
  for (int i = 0; i < 50; ++i) big.update(key_name(static_cast<uint64_t>(i)), 1 + i);
  small.merge(big);
  EXPECT_EQ(small.capacity(), 4u);
  EXPECT_EQ(small.size(), 4u);
  EXPECT_EQ(small.top(1)[0].key, key_name(49));
}

TEST(SpaceSaving, MergeRuleCountsMissingKeysAtTheOtherSidesMinimum) {
  auto a = SpaceSaving::from_items(2, 10, {{"x", 6, 0}, {"y", 4, 1}});
  auto b = SpaceSaving::from_items(2, 9, {{"x", 5, 0}, {"z", 3, 0}});
  auto c = SpaceSaving::from_items(2, 1, {{"w", 1, 0}});  // not full: minimum 0
  const SpaceSaving* parts[] = {&a, &b, &c};
  auto m = SpaceSaving::merge_all(parts, 3);
  EXPECT_EQ(m.total(), 20u);
  // x: 6+5+0; y: 4+3(b's min)+0, error 1+3; z: 4(a's min)+3, error 4; w: 4+3+1, error 7.
  std::vector<SpaceSaving::Item> want = {{"x", 11, 0}, {"w", 8, 7}, {"y", 7, 4}};
  EXPECT_EQ(m.items(), want);
  // z (4 + 3, error 4) ties y at 7: key order keeps "y", and capacity 3 cuts "z".
  EXPECT_FALSE(m.find("z").has_value());
}

// Legitimate summaries whose counts add up to more than their total: a merge into a wider
// capacity than the parts had, and a sampled report scaled up with per-count rounding (the
// coordinator does this). Both must round-trip and be accepted by from_items.
TEST(SpaceSaving, SumOfCountsMayExceedTheTotal) {
  auto a = SpaceSaving::from_items(1, 5, {{"x", 5, 0}});
  auto b = SpaceSaving::from_items(1, 5, {{"y", 5, 0}});
  const SpaceSaving* parts[] = {&a, &b};
  auto wide = SpaceSaving::merge_all(parts, 2);
  std::vector<SpaceSaving::Item> want = {{"x", 10, 5}, {"y", 10, 5}};
  EXPECT_EQ(wide.items(), want);
  EXPECT_EQ(wide.total(), 10u);
  EXPECT_EQ(SpaceSaving::deserialize(wide.serialize()), wide);
  EXPECT_NO_THROW(SpaceSaving::from_items(2, 10, wide.items()));

  // Six keys seen twice each at sample rate 0.3: round(2 / 0.3) = 7 each, total round(12 / 0.3).
  std::vector<SpaceSaving::Item> scaled;
  for (int i = 0; i < 6; ++i) scaled.push_back({key_name(static_cast<uint64_t>(i)), 7, 0});
  EXPECT_NO_THROW(SpaceSaving::from_items(8, 40, scaled));
}

// Issue #17 item 9: two summaries that each claim 2^63 records merged to a count of 0 (the
// uint64 sum wrapped). Counts and totals saturate instead, keeping error <= count <= total.
TEST(SpaceSaving, CountsSaturateInsteadOfWrapping) {
  constexpr uint64_t kHalf = uint64_t{1} << 63;
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const SpaceSaving a = SpaceSaving::from_items(4, kHalf, {{"hot", kHalf, 0}});
  const SpaceSaving b = SpaceSaving::from_items(4, kHalf, {{"hot", kHalf, kHalf - 1}});
  const SpaceSaving* parts[] = {&a, &b};
  const SpaceSaving m = SpaceSaving::merge_all(parts, 4);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m.total(), kMax);
  EXPECT_EQ(m.items()[0].count, kMax);
  EXPECT_LE(m.items()[0].error, m.items()[0].count);
  SpaceSaving u(2);
  u.update("k", kHalf);
  u.update("k", kHalf);
  u.update("k", 5);
  EXPECT_EQ(u.total(), kMax);
  EXPECT_EQ(u.estimate("k"), kMax);
  u.update("other", kMax);
  u.update("third", 1);  // replaces the minimum: its count becomes the error, saturated
  for (const auto& it : u.items()) EXPECT_LE(it.error, it.count);
}

TEST(SpaceSaving, SerializeRoundTrips) {
  for (const auto& c : property_cases()) {
    for (uint32_t k : {1u, 50u, 1024u}) {
      auto ss = sketch_of(c.stream, k);
      auto bytes = ss.serialize();
      EXPECT_EQ(static_cast<uint8_t>(bytes[0]), SpaceSaving::kFormatVersion);
      auto back = SpaceSaving::deserialize(bytes);
      EXPECT_EQ(back, ss) << c.name;
      EXPECT_EQ(back.capacity(), ss.capacity());
      EXPECT_EQ(back.min_count(), ss.min_count());
      EXPECT_EQ(back.serialize(), bytes);
      // The decoded sketch keeps working as a sketch (which of several tied minima a new key
      // replaces may differ, so compare what the rule fixes).
      const uint64_t min_before = ss.min_count();
      back.update("after", 3);
      EXPECT_EQ(back.find("after")->count, min_before + 3);
      EXPECT_EQ(back.total(), ss.total() + 3);
    }
  }
  SpaceSaving empty(9);
  EXPECT_EQ(SpaceSaving::deserialize(empty.serialize()), empty);
}

void expect_decodes_canonically_or_throws(const std::string& bytes) {
  try {
    auto s = SpaceSaving::deserialize(bytes);
    // Only canonical bytes are accepted, so a decoded sketch re-encodes to the same bytes.
    EXPECT_EQ(s.serialize(), bytes);
    EXPECT_LE(s.size(), s.capacity());
    for (const auto& it : s.items()) {
      EXPECT_LE(it.error, it.count);
      EXPECT_LE(it.count, s.total());
    }
  } catch (const std::invalid_argument&) {
  }
}

TEST(SpaceSaving, DeserializeRejectsEveryTruncation) {
  SpaceSaving ss(8);
  for (const auto& u : zipf_stream(1.0, 30, 200, 4, 4)) ss.update(u.key, u.weight);
  ss.update(std::string("\0\xff", 2), 2);
  const auto bytes = ss.serialize();
  for (size_t len = 0; len < bytes.size(); ++len) {
    EXPECT_THROW(SpaceSaving::deserialize(std::string_view(bytes).substr(0, len)),
                 std::invalid_argument)
        << "truncated to " << len;
  }
  EXPECT_THROW(SpaceSaving::deserialize(bytes + '\0'), std::invalid_argument);
}

TEST(SpaceSaving, DeserializeSurvivesRandomCorruption) {
  SpaceSaving ss(6);
  for (const auto& u : zipf_stream(1.2, 40, 300, 7, 3)) ss.update(u.key, u.weight);
  const auto bytes = ss.serialize();
  std::mt19937_64 rng(77);
  for (int round = 0; round < 4000; ++round) {
    std::string b = bytes;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      size_t at = rng() % b.size();
      if (rng() % 2) {
        b[at] = static_cast<char>(b[at] ^ (1u << (rng() % 8)));
      } else {
        b[at] = static_cast<char>(rng() & 0xff);
      }
    }
    expect_decodes_canonically_or_throws(b);
  }
  // Pure noise of many lengths.
  for (int round = 0; round < 2000; ++round) {
    std::string b(rng() % 64, '\0');
    for (auto& ch : b) ch = static_cast<char>(rng() & 0xff);
    if (!b.empty() && rng() % 2) b[0] = static_cast<char>(SpaceSaving::kFormatVersion);
    expect_decodes_canonically_or_throws(b);
  }
}

// Hand-built encodings for each rule deserialize enforces.
struct Enc {
  std::string b;
  Enc& u8(uint8_t v) {
    b.push_back(static_cast<char>(v));
    return *this;
  }
  Enc& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  Enc& u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  Enc& item(const std::string& key, uint64_t count, uint64_t error) {
    u32(static_cast<uint32_t>(key.size()));
    b += key;
    return u64(count).u64(error);
  }
};

void expect_rejected(const std::string& bytes, const std::string& fragment) {
  try {
    SpaceSaving::deserialize(bytes);
    ADD_FAILURE() << "accepted; expected an error mentioning '" << fragment << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(SpaceSaving, DeserializeSaysWhatIsWrong) {
  auto header = [](uint32_t cap, uint64_t total, uint32_t n) {
    return Enc().u8(SpaceSaving::kFormatVersion).u32(cap).u64(total).u32(n);
  };
  EXPECT_NO_THROW(SpaceSaving::deserialize(header(2, 10, 2).item("a", 6, 1).item("b", 4, 0).b));
  expect_rejected("", "truncated");
  expect_rejected(Enc().u8(2).u32(2).u64(0).u32(0).b, "version 2");
  expect_rejected(header(0, 0, 0).b, "capacity");
  expect_rejected(header(SpaceSaving::kMaxCapacity + 1, 0, 0).b, "capacity");
  expect_rejected(header(1, 10, 2).item("a", 6, 0).item("b", 4, 0).b, "more than the capacity");
  expect_rejected(header(2, 10, 1).item("a", 3, 4).b, "exceeds count");
  expect_rejected(header(2, 10, 1).item("a", 0, 0).b, "count must be >= 1");
  expect_rejected(header(3, 10, 2).item("a", 2, 0).item("a", 1, 0).b, "duplicate");
  expect_rejected(header(3, 10, 2).item("a", 2, 0).item("a", 2, 0).b, "out of order");
  expect_rejected(header(3, 10, 2).item("a", 2, 0).item("b", 3, 0).b, "out of order");
  expect_rejected(header(3, 10, 2).item("b", 2, 0).item("a", 2, 0).b, "out of order");
  expect_rejected(header(3, 5, 1).item("a", 6, 0).b, "exceeds the total");
  // Counts may add up to more than the total (see SumOfCountsMayExceedTheTotal).
  EXPECT_NO_THROW(SpaceSaving::deserialize(header(3, 5, 2).item("a", 3, 0).item("b", 3, 0).b));
  expect_rejected(header(2, 10, 1).item("a", 6, 1).u8(0).b, "trailing");
  expect_rejected(header(1000, 10, 900).b, "truncated");
  expect_rejected(Enc(header(2, 10, 1)).u32(SpaceSaving::kMaxKeyBytes + 1).u64(0).u64(0).b,
                  "exceeds the limit");
}

TEST(SpaceSaving, FromItemsValidates) {
  using Items = std::vector<SpaceSaving::Item>;
  auto ok = SpaceSaving::from_items(3, 20, Items{{"b", 5, 1}, {"a", 7, 0}});
  EXPECT_EQ(ok.size(), 2u);
  EXPECT_EQ(ok.total(), 20u);
  EXPECT_EQ(ok.min_count(), 0u);
  EXPECT_EQ(ok.items()[0].key, "a");
  auto full = SpaceSaving::from_items(2, 20, Items{{"b", 5, 1}, {"a", 7, 0}});
  EXPECT_EQ(full.min_count(), 5u);
  full.update("c");  // replaces the minimum, b
  EXPECT_EQ(full.find("c")->count, 6u);
  EXPECT_EQ(full.find("c")->error, 5u);

  auto expect_throw = [](uint32_t cap, uint64_t total, Items items, const std::string& frag) {
    try {
      SpaceSaving::from_items(cap, total, std::move(items));
      ADD_FAILURE() << "accepted; expected '" << frag << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what();
    }
  };
  expect_throw(0, 0, {}, "capacity");
  expect_throw(SpaceSaving::kMaxCapacity + 1, 0, {}, "capacity");
  expect_throw(1, 10, {{"a", 1, 0}, {"b", 1, 0}}, "more than its capacity");
  expect_throw(2, 10, {{"a", 1, 2}}, "exceeds count");
  expect_throw(2, 10, {{"a", 0, 0}}, "count must be >= 1");
  expect_throw(3, 10, {{"a", 1, 0}, {"a", 2, 0}}, "duplicate");
  expect_throw(3, 10, {{"a", 11, 0}}, "exceeds the total");
  EXPECT_NO_THROW(SpaceSaving::from_items(3, UINT64_MAX, Items{{"a", UINT64_MAX, 0}, {"b", 1, 0}}));
}

}  // namespace
}  // namespace hotkey
