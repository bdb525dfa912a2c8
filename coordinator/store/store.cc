#include "store.h"

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <mutex>

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>
#include <nlohmann/json.hpp>

#include "hotkey/key_codec.h"
#include "store_records.h"

namespace hotkey::coordinator {
namespace {

using nlohmann::json;

constexpr const char* kFormatKey = "m/format";

std::string key_id(const std::string& key) { return base64_encode(key); }

std::string list_key(const std::string& topic) { return "l/" + topic; }
std::string version_key(const std::string& topic) { return "v/" + topic; }
std::string meta_key(const std::string& topic) { return "t/" + topic; }
std::string pin_key(const std::string& topic, const std::string& key) {
  return "p/" + topic + "/" + key_id(key);
}
std::string deny_key(const std::string& topic, const std::string& key) {
  return "d/" + topic + "/" + key_id(key);
}
std::string policy_key(const std::string& topic, const std::string& prefix) {
  return "r/" + topic + "/" + key_id(prefix);
}
std::string audit_key(uint64_t seq) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "a/%020" PRIu64, seq);
  return buf;
}

}  // namespace

namespace {

// RocksDB's diagnostics go to stderr (the coordinator's log) instead of a LOG file in the data
// directory: on a full disk, Debian's librocksdb (built with assertions) aborts on the second
// append to an info log file whose first append failed, which would turn a refused write into
// a crash. Warnings and worse only; thread-safe (one fprintf per line).
class StderrInfoLogger final : public rocksdb::Logger {
 public:
  StderrInfoLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    char line[1024];
    std::vsnprintf(line, sizeof line, format, ap);
    const std::string text =
        nlohmann::json{{"level", "warn"}, {"event", "rocksdb"}, {"message", line}}.dump(
            -1, ' ', false, nlohmann::json::error_handler_t::replace) +
        "\n";
    std::fwrite(text.data(), 1, text.size(), stderr);
  }
};

}  // namespace

struct Store::Impl {
  std::unique_ptr<rocksdb::DB> db;
  std::mutex write_mu;  // keeps audit sequence numbers in commit order
  uint64_t next_audit_seq = 1;
  std::atomic<bool> healthy{true};
  // Set by the first failed write (guarded by write_mu). RocksDB's WAL writer must not be
  // appended to after an I/O error (Debian's librocksdb asserts and aborts), so the store
  // refuses every later write until the process restarts on a writable disk.
  std::string failure;
};

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Store::~Store() {
  if (impl_ && impl_->db) {
    // Syncing a WAL whose append failed aborts in Debian's librocksdb; every acknowledged
    // write was synced when it was acknowledged, so there is nothing left to flush then.
    if (impl_->failure.empty()) impl_->db->FlushWAL(true).PermitUncheckedError();
    impl_->db->Close().PermitUncheckedError();
  }
}

std::unique_ptr<Store> Store::open(const std::string& dir, std::string* error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) {
      *error = "data dir '" + dir + "' exists and is not a directory";
      return nullptr;
    }
    bool empty = fs::is_empty(dir, ec);
    if (!empty && !fs::exists(fs::path(dir) / "CURRENT", ec)) {
      *error = "data dir '" + dir +
               "' is not empty and holds no RocksDB store (no CURRENT file); refusing to use "
               "a foreign directory: point --data at an empty or hotkey directory";
      return nullptr;
    }
  } else {
    fs::create_directories(dir, ec);
    if (ec) {
      *error = "cannot create data dir '" + dir + "': " + ec.message();
      return nullptr;
    }
  }
  rocksdb::Options options;
  options.create_if_missing = true;
  options.paranoid_checks = true;
  options.keep_log_file_num = 3;
  options.info_log = std::make_shared<StderrInfoLogger>();
  options.max_manifest_file_size = 8 << 20;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, dir, &raw);
  if (!s.ok()) {
    *error = "cannot open data dir '" + dir + "': " + s.ToString();
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->db.reset(raw);
  std::string format;
  s = impl->db->Get(rocksdb::ReadOptions(), kFormatKey, &format);
  if (s.IsNotFound()) {
    std::unique_ptr<rocksdb::Iterator> it(impl->db->NewIterator(rocksdb::ReadOptions()));
    it->SeekToFirst();
    if (it->Valid()) {
      *error = "data dir '" + dir + "' holds a RocksDB store that is not a hotkey store";
      return nullptr;
    }
    rocksdb::WriteOptions wo;
    wo.sync = true;
    s = impl->db->Put(wo, kFormatKey, kFormat);
    if (!s.ok()) {
      *error = "cannot initialise data dir '" + dir + "': " + s.ToString();
      return nullptr;
    }
  } else if (!s.ok()) {
    *error = "cannot read data dir '" + dir + "': " + s.ToString();
    return nullptr;
  } else if (format != kFormat) {
    *error = "data dir '" + dir + "' has store format '" + format + "', this build reads '" +
             kFormat + "'";
    return nullptr;
  }
  {
    std::unique_ptr<rocksdb::Iterator> it(impl->db->NewIterator(rocksdb::ReadOptions()));
    it->SeekForPrev("a/~");
    if (it->Valid() && it->key().starts_with("a/")) {
      try {
        impl->next_audit_seq = decode_audit_record(it->value().ToString()).seq + 1;
      } catch (const std::exception& e) {
        *error = "data dir '" + dir + "' has a corrupt audit record: " + e.what();
        return nullptr;
      }
    }
  }
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

std::map<std::string, StoredTopic> Store::load(std::string* error,
                                               std::vector<std::string>* skipped) const {
  std::map<std::string, StoredTopic> out;
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string key = it->key().ToString();
    try {
      load_record(key, it->value().ToString(), out);
    } catch (const std::exception& e) {
      const std::string what =
          "corrupt record '" + printable_key(key) + "' in the data dir: " + e.what();
      if (key.starts_with("l/") || key.starts_with("t/")) {
        if (skipped) skipped->push_back(what);
        continue;
      }
      *error = what;
      return {};
    }
  }
  if (!it->status().ok()) {
    *error = "cannot read the data dir: " + it->status().ToString();
    return {};
  }
  for (auto& [topic, t] : out) {
    if (t.list && t.list->version > t.version) t.version = t.list->version;
  }
  return out;
}

StoreStatus Store::write(StoreBatch& batch, double* latency_s) {
  auto start = std::chrono::steady_clock::now();
  std::lock_guard lock(impl_->write_mu);
  if (!impl_->failure.empty()) return StoreStatus::Error(impl_->failure);
  rocksdb::WriteBatch wb;
  // Deletes first, then puts, each in call order (a put of a key the batch also deletes wins).
  for (const auto& op : batch.ops()) {
    if (const auto* d = std::get_if<StoreBatch::DeletePin>(&op)) {
      wb.Delete(pin_key(d->topic, d->key));
    } else if (const auto* dd = std::get_if<StoreBatch::DeleteDeny>(&op)) {
      wb.Delete(deny_key(dd->topic, dd->key));
    } else if (const auto* dp = std::get_if<StoreBatch::DeletePolicy>(&op)) {
      wb.Delete(policy_key(dp->topic, dp->prefix));
    } else if (const auto* drop = std::get_if<StoreBatch::DropTopic>(&op)) {
      wb.Delete(list_key(drop->topic));
      wb.Delete(meta_key(drop->topic));
    }
  }
  for (const auto& op : batch.ops()) {
    if (const auto* l = std::get_if<StoreBatch::PutList>(&op)) {
      wb.Put(list_key(l->list.topic), list_to_json(l->list));  // validated by put_list
      wb.Put(version_key(l->list.topic), encode_version_record(l->list.version));
    } else if (const auto* m = std::get_if<StoreBatch::PutTopicMeta>(&op)) {
      wb.Put(meta_key(m->topic), encode_topic_meta_record(m->meta));
    } else if (const auto* p = std::get_if<StoreBatch::PutPin>(&op)) {
      wb.Put(pin_key(p->topic, p->pin.key), encode_pin_record(p->pin));
    } else if (const auto* d = std::get_if<StoreBatch::PutDeny>(&op)) {
      wb.Put(deny_key(d->topic, d->deny.key), encode_deny_record(d->deny));
    } else if (const auto* r = std::get_if<StoreBatch::PutPolicy>(&op)) {
      wb.Put(policy_key(r->topic, r->policy.prefix), encode_policy_record(r->policy));
    } else if (const auto* drop = std::get_if<StoreBatch::DropTopic>(&op)) {
      if (drop->version > 0) {
        wb.Put(version_key(drop->topic), encode_version_record(drop->version));
      }
    } else if (const auto* meta = std::get_if<StoreBatch::PutMeta>(&op)) {
      wb.Put("m/" + meta->name, meta->value);
    } else if (const auto* pa = std::get_if<StoreBatch::PutAudit>(&op)) {
      if (pa->entry.seq > 0) wb.Put(audit_key(pa->entry.seq), audit_to_json(pa->entry));
    }
  }
  uint64_t seq = impl_->next_audit_seq;
  for (auto& a : batch.audits()) {
    a.seq = seq++;
    wb.Put(audit_key(a.seq), audit_to_json(a));
  }
  rocksdb::WriteOptions wo;
  wo.sync = true;
  rocksdb::Status s = impl_->db->Write(wo, &wb);
  if (latency_s) {
    *latency_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (!s.ok()) {
    impl_->healthy = false;
    impl_->failure = "store write failed: " + s.ToString() +
                     "; writes stay refused until the coordinator restarts on a writable disk";
    return StoreStatus::Error(impl_->failure);
  }
  impl_->next_audit_seq = seq;
  impl_->healthy = true;
  return StoreStatus::Ok();
}

std::vector<AuditEntry> Store::audit(size_t limit) const {
  std::vector<AuditEntry> out;
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekForPrev("a/~"); it->Valid() && out.size() < limit; it->Prev()) {
    if (!it->key().starts_with("a/")) break;
    try {
      out.push_back(decode_audit_record(it->value().ToString()));
    } catch (const std::exception&) {
      continue;  // a damaged entry must not hide the rest of the log
    }
  }
  return out;
}

std::optional<std::string> Store::meta(const std::string& name) const {
  std::string value;
  rocksdb::Status s = impl_->db->Get(rocksdb::ReadOptions(), "m/" + name, &value);
  if (!s.ok()) return std::nullopt;
  return value;
}

std::optional<uint64_t> Store::version_counter(const std::string& topic) const {
  std::string value;
  rocksdb::Status s = impl_->db->Get(rocksdb::ReadOptions(), version_key(topic), &value);
  if (!s.ok()) return std::nullopt;
  try {
    return decode_version_record(value);
  } catch (const std::exception&) {
    return std::nullopt;  // load() refuses a data dir with a damaged counter: not reached
  }
}

StoreStatus Store::probe(double* latency_s) {
  std::lock_guard lock(impl_->write_mu);
  if (!impl_->failure.empty()) return StoreStatus::Error(impl_->failure);
  rocksdb::WriteOptions wo;
  wo.sync = true;
  const auto start = std::chrono::steady_clock::now();
  rocksdb::Status s = impl_->db->Put(wo, "m/probe", "1");
  if (latency_s) {
    *latency_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  impl_->healthy = s.ok();
  if (!s.ok()) {
    impl_->failure = "store not writable: " + s.ToString() +
                     "; writes stay refused until the coordinator restarts on a writable disk";
    return StoreStatus::Error(impl_->failure);
  }
  return StoreStatus::Ok();
}

bool Store::healthy() const { return impl_->healthy.load(); }

}  // namespace hotkey::coordinator
