// The coordinator's two log events (store errors, list changes), written to its LogSink.
#include "coordinator_topic.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <set>
#include "hotkey/key_codec.h"

namespace hotkey::coordinator {

void Coordinator::log_store_error(const std::string& topic, const StoreStatus& st) const {
  log_.write(json{{"ts_ms", clock_.now_ms()},
                    {"level", "error"},
                    {"event", "store_error"},
                    {"topic", topic},
                    {"error", st.error}});
}

void Coordinator::log_list_change(const HotKeyList& before, const HotKeyList& after,
                                  const std::string& cause) const {
  std::set<std::string> old_keys, new_keys;
  for (const auto& k : before.keys) old_keys.insert(k.key);
  for (const auto& k : after.keys) new_keys.insert(k.key);
  json added = json::array(), removed = json::array();
  for (const auto& k : new_keys) {
    if (!old_keys.contains(k) && added.size() < 20) added.push_back(printable_key(k));
  }
  for (const auto& k : old_keys) {
    if (!new_keys.contains(k) && removed.size() < 20) removed.push_back(printable_key(k));
  }
  json line{{"ts_ms", clock_.now_ms()},
            {"level", "info"},
            {"event", "list_change"},
            {"topic", after.topic},
            {"version", after.version},
            {"cause", cause},
            {"partitions", after.partitions},
            {"keys", after.keys.size()},
            {"denied", after.denied.size()},
            {"added", added},
            {"removed", removed}};
  log_.write(line);
}

}  // namespace hotkey::coordinator
