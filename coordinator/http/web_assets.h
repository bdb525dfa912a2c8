// The dashboard files (coordinator/web/), embedded at build time. Immutable; thread-safe.
#pragma once

#include <string_view>
#include <vector>

namespace hotkey::coordinator {

struct WebAsset {
  std::string_view path;  // "/index.html", "/app.js", "/css/x.css"
  std::string_view content_type;
  std::string_view bytes;
};

// Every embedded file, sorted by path.
const std::vector<WebAsset>& web_assets();

}  // namespace hotkey::coordinator
