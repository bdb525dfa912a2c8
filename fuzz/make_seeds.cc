// Writes the seed corpora under fuzz/corpus/<target>/ from the real encoders, plus hand-made
// edge cases. Run by hand after a format change: make_seeds <fuzz/corpus dir>. The committed
// files are what the replay tests use; this program only documents how they were made.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hotkey/hotkey_list.h"
#include "hotkey/report.h"
#include "hotkey/salt_planner.h"
#include "hotkey/space_saving.h"

namespace {

namespace fs = std::filesystem;

void write(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

hotkey::Report make_report(int variant) {
  hotkey::Report r;
  r.producer = "producer-" + std::to_string(variant);
  r.topic = variant == 2 ? "orders.v2_eu-1" : "orders";
  r.partitions = variant == 1 ? 1 : 12;
  r.hash = static_cast<hotkey::HashFamily>(variant % 3);
  r.window_ms = 10000;
  r.sample_rate = variant == 3 ? 0.25 : 1.0;
  r.seq = 41 + variant;
  r.sent_at_ms = 1700000000000 + variant;
  r.list_version = variant;
  r.partition_counts.assign(r.partitions, 0);
  hotkey::SpaceSaving sketch(variant == 4 ? 2 : 16);
  const std::vector<std::string> keys = {"tenant-7", "tenant-9", std::string("\xff\xfe\x00k", 4),
                                         "",         "user:42",  "seller#3"};
  uint64_t total = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint64_t w = (i + 1) * 10;
    sketch.update(keys[i], w);
    total += w;
    r.partition_counts[i % r.partitions] += w;
  }
  r.total = total;
  r.sketch_capacity = sketch.capacity();
  r.sketch_min = sketch.min_count();
  r.sketch_total = sketch.total();
  for (const auto& it : sketch.items()) r.items.push_back({it.key, it.count, it.error});
  if (variant == 5) {
    r.items.clear();
    r.sketch_min = 0;
    r.sketch_total = 0;
  }
  return r;
}

hotkey::HotKeyList make_list(int variant) {
  hotkey::HotKeyList list;
  list.topic = "orders";
  list.version = 7 + variant;
  list.partitions = variant == 1 ? 3 : 24;
  list.hash = static_cast<hotkey::HashFamily>(variant % 3);
  list.separator = variant == 2 ? "|" : "#";
  list.updated_at_ms = 1700000000000;
  const std::vector<std::string> keys = {"tenant-7", std::string("\x80\x81", 2), "user:42"};
  for (size_t i = 0; i < keys.size() && variant != 3; ++i) {
    hotkey::SaltSpace space;
    space.family = list.hash;
    space.partitions = list.partitions;
    space.separator = list.separator;
    hotkey::HotKey key;
    key.key = keys[i];
    key.salts = hotkey::plan_salts(keys[i], static_cast<uint32_t>(2 + i), space).salts;
    key.source = i == 1 ? hotkey::KeySource::kPinned : hotkey::KeySource::kDetected;
    key.rate = 1234.5 * static_cast<double>(i + 1);
    key.share = 0.1 * static_cast<double>(i + 1);
    list.keys.push_back(key);
  }
  list.denied = {"account-1"};
  if (variant == 4) list.denied.push_back(std::string("\xc3\x28", 2));
  return list;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FUZZ_CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  for (int v = 0; v < 6; ++v) {
    const auto r = make_report(v);
    hotkey::validate_report(r);
    write(root / "report_json", "seed-" + std::to_string(v) + ".json", hotkey::report_to_json(r));
    write(root / "report_binary", "seed-" + std::to_string(v) + ".bin",
          hotkey::encode_report_binary(r));
  }
  // Edge cases: the shortest inputs and near-misses that must be rejected cleanly.
  const auto good = hotkey::encode_report_binary(make_report(0));
  write(root / "report_binary", "edge-empty", "");
  write(root / "report_binary", "edge-magic-only", good.substr(0, 3));
  write(root / "report_binary", "edge-truncated", good.substr(0, good.size() / 2));
  write(root / "report_binary", "edge-trailing", good + "x");
  write(root / "report_json", "edge-empty", "");
  write(root / "report_json", "edge-not-object", "[1,2,3]");
  write(root / "report_json", "edge-deep", std::string(5000, '[') + std::string(5000, ']'));
  write(root / "report_json", "edge-nan",
        "{\"producer\":\"p\",\"topic\":\"t\",\"partitions\":1,\"hash\":\"murmur2\","
        "\"window_ms\":1,\"sample_rate\":NaN,\"total\":0,\"partition_counts\":[0],"
        "\"sketch\":{\"capacity\":1,\"min\":0,\"items\":[]}}");
  write(root / "report_json", "edge-negative",
        "{\"producer\":\"p\",\"topic\":\"t\",\"partitions\":1,\"hash\":\"murmur2\","
        "\"window_ms\":1,\"sample_rate\":1,\"total\":-1,\"partition_counts\":[-1],"
        "\"sketch\":{\"capacity\":1,\"min\":0,\"items\":[{\"key_b64\":\"!!\",\"count\":1e300,"
        "\"error\":0}]}}");
  for (int v = 0; v < 5; ++v) {
    const auto list = make_list(v);
    hotkey::validate_list(list);
    write(root / "list_json", "seed-" + std::to_string(v) + ".json", hotkey::list_to_json(list));
  }
  write(root / "list_json", "edge-empty", "");
  write(root / "list_json", "edge-bad-salt",
        "{\"topic\":\"orders\",\"version\":1,\"partitions\":4,\"hash\":\"murmur2\","
        "\"separator\":\"#\",\"keys\":[{\"key\":\"k\",\"salts\":[{\"salt\":0,\"partition\":3,"
        "\"weight\":1}],\"source\":\"detected\",\"rate\":1,\"share\":0.5}],\"denied\":[]}");
  for (uint32_t cap : {1u, 4u, 64u}) {
    hotkey::SpaceSaving s(cap);
    for (uint32_t i = 0; i < cap * 3; ++i) s.update("k" + std::to_string(i % (cap + 2)), i + 1);
    write(root / "space_saving", "seed-cap" + std::to_string(cap), s.serialize());
  }
  write(root / "space_saving", "seed-empty-sketch", hotkey::SpaceSaving(8).serialize());
  write(root / "space_saving", "edge-empty", "");
  write(root / "space_saving", "edge-version-2", std::string("\x02", 1));
  const auto ss = [] {
    hotkey::SpaceSaving s(4);
    s.update("a", 5);
    s.update("b", 3);
    return s.serialize();
  }();
  write(root / "space_saving", "edge-truncated", ss.substr(0, ss.size() - 1));
  write(root / "space_saving", "edge-trailing", ss + "\x00");
  std::printf("seed corpora written under %s\n", root.c_str());
  return 0;
}
