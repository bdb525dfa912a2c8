#include "rate_limiter.h"

#include <cmath>
#include <stdexcept>

namespace hotkey::coordinator {

RateLimiter::RateLimiter(double rate, uint32_t burst, size_t max_clients)
    : rate_(rate), burst_(burst), max_clients_(max_clients) {
  if (!std::isfinite(rate) || rate < 0) throw std::invalid_argument("rate must be >= 0");
  if (burst < 1) throw std::invalid_argument("burst must be >= 1");
  if (max_clients < 1) throw std::invalid_argument("max_clients must be >= 1");
}

RateLimiter::Decision RateLimiter::acquire(std::string_view client, Clock::time_point now) {
  if (rate_ <= 0) return {};
  std::lock_guard lock(mu_);
  auto it = index_.find(client);
  if (it == index_.end()) {
    // A client seen for the first time starts with a full bucket; dropping the least recently
    // seen bucket therefore only ever gives that client its burst back, never less.
    if (index_.size() >= max_clients_) {
      index_.erase(lru_.back().client);
      lru_.pop_back();
    }
    lru_.push_front(Bucket{std::string(client), static_cast<double>(burst_), now});
    it = index_.emplace(lru_.front().client, lru_.begin()).first;
  } else if (it->second != lru_.begin()) {
    lru_.splice(lru_.begin(), lru_, it->second);
  }
  Bucket& b = *it->second;
  if (now > b.updated) {
    const double elapsed = std::chrono::duration<double>(now - b.updated).count();
    b.tokens = std::min<double>(burst_, b.tokens + elapsed * rate_);
    b.updated = now;
  }
  if (b.tokens >= 1.0) {
    b.tokens -= 1.0;
    return {};
  }
  const double wait_s = (1.0 - b.tokens) / rate_;
  return {false, static_cast<uint32_t>(std::max(1.0, std::ceil(wait_s)))};
}

size_t RateLimiter::clients() const {
  std::lock_guard lock(mu_);
  return index_.size();
}

}  // namespace hotkey::coordinator
