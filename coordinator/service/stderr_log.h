// The service's log: each event as one JSON line on stderr, written whole and flushed (lines of
// concurrent writers never interleave within a line: one fwrite each on unbuffered stderr).
// Thread-safe.
#pragma once

#include "log_sink.h"

namespace hotkey::coordinator {

class StderrLog final : public LogSink {
 public:
  void write(const api::Json& event) override;
};

}  // namespace hotkey::coordinator
