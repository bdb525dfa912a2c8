// The coordinator's two log events (store errors, list changes), written to its LogSink.
#include "coordinator_topic.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
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
  std::set<std::string> old_keys;
  std::map<std::string, KeySource> new_keys;
  for (const auto& k : before.keys) old_keys.insert(k.key);
  for (const auto& k : after.keys) new_keys.emplace(k.key, k.source);
  // "added" keeps its shape (keys); "sources" says why each listed key is salted, by count,
  // and "added_balance" which of the added keys were salted only to level the partitions.
  json added = json::array(), added_balance = json::array(), removed = json::array();
  json sources{{"detected", 0}, {"balance", 0}, {"pinned", 0}};
  for (const auto& [k, src] : new_keys) {
    sources[std::string(to_string(src))] = sources[std::string(to_string(src))].get<int>() + 1;
    if (old_keys.contains(k)) continue;
    if (added.size() < 20) added.push_back(printable_key(k));
    if (src == KeySource::kBalance && added_balance.size() < 20) {
      added_balance.push_back(printable_key(k));
    }
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
            {"sources", sources},
            {"denied", after.denied.size()},
            {"added", added},
            {"added_balance", added_balance},
            {"removed", removed}};
  log_.write(line);
}

}  // namespace hotkey::coordinator
