// Shared helpers for the fuzz entry points: a property that fails aborts, so libFuzzer (and the
// corpus replay test) report it as a crash with the input that caused it.
#pragma once

#include <cstdio>
#include <cstdlib>

#define HOTKEY_FUZZ_CHECK(cond)                                                             \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)
