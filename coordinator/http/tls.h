// The coordinator's listening server: plain HTTP, or HTTPS when the config names a certificate
// (docs/SECURITY.md, "TLS"). The SSL_CTX is set up here rather than by httplib's file constructor
// so that a bad file is refused with a message naming it.
#pragma once

#include <httplib.h>

#include <memory>

#include "config.h"

namespace hotkey::coordinator {

// A BoundedServer or BoundedSslServer (http_connection.h) for `config`; throws
// std::invalid_argument naming the file when the TLS files cannot be used.
std::unique_ptr<httplib::Server> make_server(const CoordinatorConfig& config);

}  // namespace hotkey::coordinator
