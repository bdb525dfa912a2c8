// The three baselines, as producers run them today: the key is rewritten before librdkafka's
// murmur2_random partitioner (the Java client's default hash) places it.
#include <librdkafka/rdkafka.h>

#include <charconv>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kafka_producer.h"
#include "strategy.h"

namespace hotkey::loadgen {
namespace {

// Appends "#<salt>" the way every salting recipe writes its salted keys.
void append_salt(std::string& out, uint32_t salt) {
  char buf[16];
  buf[0] = '#';
  auto [end, ec] = std::to_chars(buf + 1, buf + sizeof buf, salt);
  (void)ec;
  out.append(buf, end);
}

class RewritingStrategy : public Strategy {
 public:
  explicit RewritingStrategy(const StrategyOptions& options) : producer_(options) {}

  bool send(std::string_view key, std::string_view value, bool* salted) override {
    *salted = rewrite(key, buf_);
    return producer_.produce(*salted ? std::string_view(buf_) : key, value);
  }
  void poll(int timeout_ms) override { producer_.poll(timeout_ms); }
  bool flush(int timeout_ms) override { return producer_.flush(timeout_ms); }
  int32_t partitions() const override { return producer_.partitions(); }
  uint64_t delivered() const override { return producer_.delivered(); }
  uint64_t failed() const override { return producer_.failed(); }

 protected:
  // Writes the key to send into `out` and returns true when the record is salted; false means
  // send `key` unchanged.
  virtual bool rewrite(std::string_view key, std::string& out) = 0;

 private:
  KafkaProducer producer_;
  std::string buf_;
};

class NaiveStrategy final : public RewritingStrategy {
 public:
  using RewritingStrategy::RewritingStrategy;

 protected:
  bool rewrite(std::string_view, std::string&) override { return false; }
};

// A hand-kept whitelist, each listed key spread over `salts` salts drawn at random per record.
class StaticStrategy final : public RewritingStrategy {
 public:
  explicit StaticStrategy(const StrategyOptions& options)
      : RewritingStrategy(options),
        whitelist_(options.whitelist.begin(), options.whitelist.end()),
        salts_(options.salts),
        rng_(options.seed) {
    if (salts_ < 1) throw std::invalid_argument("static: --salts must be >= 1");
  }

 protected:
  bool rewrite(std::string_view key, std::string& out) override {
    if (whitelist_.empty() || !whitelist_.count(std::string(key))) return false;
    out.assign(key);
    append_salt(out, static_cast<uint32_t>(rng_() % salts_));
    return true;
  }

 private:
  std::unordered_set<std::string> whitelist_;
  uint32_t salts_;
  std::mt19937_64 rng_;
};

// static with the salts chosen so that each lands on a partition of its own (the first salt
// numbers whose murmur2 partition is new), one random salt per record: the same per-record
// work as static, spread over `salts` distinct partitions the way the coordinator's plan
// spreads a hot key (static's random salts collide: 8 of them reach 6-7 of 12 partitions).
class StaticSpreadStrategy final : public RewritingStrategy {
 public:
  explicit StaticSpreadStrategy(const StrategyOptions& options)
      : RewritingStrategy(options),
        whitelist_(options.whitelist.begin(), options.whitelist.end()),
        rng_(options.seed) {
    const int32_t parts = partitions();
    if (options.salts < 1 || static_cast<int32_t>(options.salts) > parts) {
      throw std::invalid_argument("static_spread: --salts must be 1..partitions (" +
                                  std::to_string(parts) + ")");
    }
    for (const auto& key : whitelist_) {
      std::vector<bool> taken(static_cast<size_t>(parts), false);
      std::vector<uint32_t>& salts = salts_[key];
      std::string salted;
      for (uint32_t salt = 0; salts.size() < options.salts && salt < 1000000; ++salt) {
        salted.assign(key);
        append_salt(salted, salt);
        const int32_t p = rd_kafka_msg_partitioner_murmur2(nullptr, salted.data(), salted.size(),
                                                           parts, nullptr, nullptr);
        if (!taken[static_cast<size_t>(p)]) {
          taken[static_cast<size_t>(p)] = true;
          salts.push_back(salt);
        }
      }
    }
  }

 protected:
  bool rewrite(std::string_view key, std::string& out) override {
    if (whitelist_.empty()) return false;
    auto it = salts_.find(std::string(key));
    if (it == salts_.end()) return false;
    out.assign(key);
    append_salt(out, it->second[rng_() % it->second.size()]);
    return true;
  }

 private:
  std::unordered_set<std::string> whitelist_;
  std::unordered_map<std::string, std::vector<uint32_t>> salts_;
  std::mt19937_64 rng_;
};

// Per-process detection: an exponentially decayed counter per key (the rate it sees locally),
// hot above an absolute rate, salted round-robin over `salts` salts.
class AdaptiveStrategy final : public RewritingStrategy {
 public:
  explicit AdaptiveStrategy(const StrategyOptions& options)
      : RewritingStrategy(options),
        salts_(options.salts),
        threshold_(options.adaptive_rate),
        tau_s_(options.adaptive_half_life_s / std::log(2.0)) {
    if (salts_ < 1) throw std::invalid_argument("adaptive: --salts must be >= 1");
    if (threshold_ <= 0 || tau_s_ <= 0) {
      throw std::invalid_argument("adaptive: rate threshold and half-life must be > 0");
    }
  }

 protected:
  bool rewrite(std::string_view key, std::string& out) override {
    const double now = now_s();
    auto [it, inserted] = counters_.try_emplace(std::string(key));
    Counter& c = it->second;
    // A decayed count with time constant tau estimates rate * tau.
    c.count = c.count * std::exp(-(now - c.last_s) / tau_s_) + 1.0;
    c.last_s = now;
    const double rate = c.count / tau_s_;
    if (!c.hot && rate >= threshold_) c.hot = true;
    if (c.hot && rate < threshold_ / 2) c.hot = false;
    // Keep the table bounded the way real recipes do: drop cold entries now and then.
    if (counters_.size() > kMaxTracked) prune(now);
    if (!c.hot) return false;
    out.assign(key);
    append_salt(out, c.next_salt++ % salts_);
    return true;
  }

 private:
  struct Counter {
    double count = 0;
    double last_s = 0;
    uint32_t next_salt = 0;
    bool hot = false;
  };
  static constexpr size_t kMaxTracked = 200000;

  static double now_s() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  void prune(double now) {
    for (auto it = counters_.begin(); it != counters_.end();) {
      const double decayed = it->second.count * std::exp(-(now - it->second.last_s) / tau_s_);
      if (!it->second.hot && decayed < 1.0) {
        it = counters_.erase(it);
      } else {
        ++it;
      }
    }
  }

  uint32_t salts_;
  double threshold_;
  double tau_s_;
  std::unordered_map<std::string, Counter> counters_;
};

}  // namespace

std::unique_ptr<Strategy> make_hotkey_strategy(
    const StrategyOptions& options);  // hotkey_strategy.cc
std::unique_ptr<Strategy> make_producer_strategy(const StrategyOptions& options);
bool have_hotkey_strategy();

std::vector<std::string> strategy_names() {
  std::vector<std::string> names{"naive", "static", "static_spread", "adaptive"};
  if (have_hotkey_strategy()) {
    names.push_back("hotkey");
    names.push_back("producer");
  }
  return names;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const StrategyOptions& options) {
  if (name == "naive") return std::make_unique<NaiveStrategy>(options);
  if (name == "static") return std::make_unique<StaticStrategy>(options);
  if (name == "static_spread") return std::make_unique<StaticSpreadStrategy>(options);
  if (name == "adaptive") return std::make_unique<AdaptiveStrategy>(options);
  if (name == "hotkey" && have_hotkey_strategy()) return make_hotkey_strategy(options);
  if (name == "producer" && have_hotkey_strategy()) return make_producer_strategy(options);
  throw std::invalid_argument("unknown strategy '" + name +
                              "' (naive, static, static_spread, adaptive; hotkey and producer "
                              "when the client is built)");
}

}  // namespace hotkey::loadgen
