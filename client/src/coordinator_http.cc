#include "coordinator_http.h"

#include <httplib.h>

#include <ctime>
#include <utility>

namespace hotkey::client::detail {

std::unique_ptr<httplib::Client> make_coordinator_http(const ClientConfig& c,
                                                       uint32_t extra_read_ms) {
  auto cli = c.ssl_certificate_location.empty()
                 ? std::make_unique<httplib::Client>(c.coordinator_url)
                 : std::make_unique<httplib::Client>(c.coordinator_url, c.ssl_certificate_location,
                                                     c.ssl_key_location);
  // httplib verifies the server certificate and host name by default; only the trust anchors
  // change here.
  if (!c.ssl_ca_location.empty()) cli->set_ca_cert_path(c.ssl_ca_location);
  auto set = [](uint32_t ms) { return std::pair<time_t, time_t>(ms / 1000, (ms % 1000) * 1000); };
  auto [cs, cu] = set(c.http_timeout_ms);
  cli->set_connection_timeout(cs, cu);
  auto [ws, wu] = set(c.http_timeout_ms);
  cli->set_write_timeout(ws, wu);
  auto [rs, ru] = set(c.http_timeout_ms + extra_read_ms);
  cli->set_read_timeout(rs, ru);
  cli->set_keep_alive(true);
  if (!c.token.empty()) cli->set_bearer_token_auth(c.token.c_str());
  return cli;
}

}  // namespace hotkey::client::detail
