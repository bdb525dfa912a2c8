// The embedded dashboard (docs/API.md, "Dashboard"): / and /index.html, and /static/... for its
// scripts and styles (web_assets.h).
#include <string>
#include <string_view>

#include "responses.h"
#include "routes.h"
#include "web_assets.h"

namespace hotkey::coordinator {
namespace {

bool serve_asset(std::string_view path, httplib::Response& res) {
  for (const auto& a : web_assets()) {
    if (a.path == path) {
      res.set_header("Cache-Control", "no-cache");
      res.set_content(std::string(a.bytes), std::string(a.content_type));
      return true;
    }
  }
  return false;
}

void get_index(Call& c) {
  if (!serve_asset("/index.html", c.res)) send_error(c.res, 404, "no dashboard embedded");
}

}  // namespace

void add_dashboard_routes(Routes& routes, const RouteContext& /*ctx*/) {
  routes.push_back({"GET", "/", Admission{}, get_index});
  routes.push_back({"GET", "/index.html", Admission{}, get_index});
  routes.push_back({"GET", R"(/static/(.+))", Admission{}, [](Call& c) {
                      const std::string rel = "/" + std::string(c.req.matches[1]);
                      if (rel.find("..") != std::string::npos || !serve_asset(rel, c.res)) {
                        send_error(c.res, 404, "no such file: " + std::string(c.req.path));
                      }
                    }});
}

}  // namespace hotkey::coordinator
