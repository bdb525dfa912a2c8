// Per-client token buckets for the HTTP API's request rate limits (docs/SECURITY.md). Memory is
// bounded: at most max_clients buckets, the least recently seen one dropped first.
// Thread-safe: one mutex, held for a hash lookup per request.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace hotkey::coordinator {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  // `rate` tokens per second refill each client's bucket of `burst` tokens; rate 0 disables
  // the limit (every request allowed, nothing stored). std::invalid_argument for a negative
  // or non-finite rate, burst 0 or max_clients 0.
  RateLimiter(double rate, uint32_t burst, size_t max_clients);

  struct Decision {
    bool allowed = true;
    uint32_t retry_after_s = 0;  // when refused: whole seconds until a token is back (>= 1)
  };
  // Takes one token from `client`'s bucket.
  Decision acquire(std::string_view client, Clock::time_point now = Clock::now());

  bool enabled() const { return rate_ > 0; }
  double rate() const { return rate_; }
  uint32_t burst() const { return burst_; }
  size_t clients() const;

 private:
  struct Bucket {
    std::string client;
    double tokens;
    Clock::time_point updated;
  };

  const double rate_;
  const uint32_t burst_;
  const size_t max_clients_;
  mutable std::mutex mu_;
  // Most recently used first; the map points into the list.
  std::list<Bucket> lru_;
  std::unordered_map<std::string_view, std::list<Bucket>::iterator> index_;
};

}  // namespace hotkey::coordinator
