// splitmix64 (Steele, Lea and Flood): a 64-bit counter to well-mixed pseudo-random bits, for
// the client's per-process seeds (sampler shards, round-robin starts).
#pragma once

#include <cstdint>

namespace hotkey::client::detail {

inline uint64_t splitmix64(uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace hotkey::client::detail
