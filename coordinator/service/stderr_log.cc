#include "stderr_log.h"

#include <cstdio>
#include <string>

namespace hotkey::coordinator {

void StderrLog::write(const api::Json& event) {
  std::string text = event.dump(-1, ' ', false, api::Json::error_handler_t::replace) + "\n";
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

}  // namespace hotkey::coordinator
