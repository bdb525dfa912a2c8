// Tiny --name value argument reader shared by the examples.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

namespace hotkey::examples {

// The value after `--name`, or `fallback`.
inline std::string arg(int argc, char** argv, const char* name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

}  // namespace hotkey::examples
