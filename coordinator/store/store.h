// Durable coordinator state in RocksDB (the core's StateStore): published lists and their
// version counters, pins, denies, topic metadata and the audit log. One instance per data
// directory; thread-safe (RocksDB serialises writers; every method may be called from any
// thread). Record formats: store_records.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hotkey/hotkey_list.h"
#include "state_store.h"

namespace hotkey::coordinator {

class Store final : public StateStore {
 public:
  // The format record every data directory carries; a directory without it (and not empty)
  // is foreign and refused.
  static constexpr const char* kFormat = "hotkey-coordinator-store/1";

  // Opens (creating when missing) the store at `dir`. Returns nullptr and sets *error on a
  // foreign, corrupt, locked or newer-format directory.
  static std::unique_ptr<Store> open(const std::string& dir, std::string* error);
  ~Store() override;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // StateStore (documented there).
  std::map<std::string, StoredTopic> load(
      std::string* error, std::vector<std::string>* skipped = nullptr) const override;
  StoreStatus write(StoreBatch& batch, double* latency_s = nullptr) override;
  std::vector<AuditEntry> audit(size_t limit) const override;
  std::optional<std::string> meta(const std::string& name) const override;
  std::optional<uint64_t> version_counter(const std::string& topic) const override;
  StoreStatus probe(double* latency_s = nullptr) override;
  bool healthy() const override;

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hotkey::coordinator
