// The librdkafka the plugin calls: the copy that loaded it (rdkafka_forward.cc).
#pragma once

#include <string>

namespace hotkey::client::plugin {

// Binds the plugin's rd_kafka_* calls to the librdkafka that holds `caller` (an address in the
// code that called conf_init). Empty when bound (or already bound to that copy), otherwise the
// reason to refuse, short enough that its first part survives a 128-byte errstr.
std::string bind_librdkafka(const void* caller);

}  // namespace hotkey::client::plugin
