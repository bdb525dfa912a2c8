// The HTTP connection of one of the client's background threads to the coordinator
// (hotkey.coordinator.url): TLS trust and client certificate, timeouts, keep-alive, the
// producer token.
#pragma once

#include <cstdint>
#include <memory>

#include "hotkey/client/config.h"

namespace httplib {
class Client;
}

namespace hotkey::client::detail {

// A client for config.coordinator_url with connect and write timeouts of
// hotkey.http.timeout.ms and a read timeout longer by `extra_read_ms` (a long-poll's wait).
// httplib verifies the server certificate and host name; config only changes the trust anchors.
std::unique_ptr<httplib::Client> make_coordinator_http(const ClientConfig& config,
                                                       uint32_t extra_read_ms);

}  // namespace hotkey::client::detail
