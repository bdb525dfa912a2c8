// Heap allocations made through the global operator new since start, for benchmarks that
// report allocations per operation. Linking alloc_counter.cc replaces the global operator new
// of the whole program; the count is a relaxed atomic, safe from any thread.
#pragma once

#include <cstdint>

namespace hotkey {

uint64_t allocation_count() noexcept;

}  // namespace hotkey
