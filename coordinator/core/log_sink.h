// Where the coordinator's log events go (docs/OPERATIONS.md, "Metrics"): one JSON object per
// event, carrying its ts_ms. The core only builds events; the service's sink
// (coordinator/service/stderr_log.h) writes each as one line on stderr. Implementations are
// thread-safe.
#pragma once

#include <chrono>

#include "hotkey/api_model.h"

namespace hotkey::coordinator {

class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void write(const api::Json& event) = 0;
};

// `event` stamped with the wall clock's ts_ms and written to `log` (for the parts without a
// Clock: the service itself and the Kafka layer).
inline void log_now(LogSink& log, api::Json event) {
  event["ts_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  log.write(event);
}

}  // namespace hotkey::coordinator
