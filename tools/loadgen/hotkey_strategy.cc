// This project's strategy: the producer client library routing against the coordinator.
// Built only when the client library (client/) is part of the build.
#include <memory>
#include <stdexcept>

#include "strategy.h"

namespace hotkey::loadgen {

#ifndef HOTKEY_LOADGEN_WITH_CLIENT

bool have_hotkey_strategy() { return false; }
std::unique_ptr<Strategy> make_hotkey_strategy(const StrategyOptions&) {
  throw std::invalid_argument("hotkey strategy: this build has no client library");
}

#endif

}  // namespace hotkey::loadgen
