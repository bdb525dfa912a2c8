// `hotkeyctl analyze`: the pre-launch check. From a sample of keys it shows how the topic's
// partitioner spreads them, which keys need salting, and the spread after verified,
// load-aware salting as the coordinator would plan it.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "command.h"
#include "flags.h"
#include "hotkey/key_codec.h"
#include "hotkey/partitioner.h"
#include "hotkey/salt_planner.h"

namespace hotkeyctl {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::array kAnalyzeFlags = {
    FlagSpec{"partitions", true}, FlagSpec{"hash", true},       FlagSpec{"separator", true},
    FlagSpec{"json", false},      FlagSpec{"hot-factor", true}, FlagSpec{"fail-on-warn", false},
    FlagSpec{"b64", false},
};

constexpr double kDefaultHotFactor = 0.5;

struct KeyCount {
  std::string key;
  uint64_t count = 0;
};

struct Sample {
  std::vector<KeyCount> keys;  // distinct keys, in first-seen order
  uint64_t total = 0;
  uint64_t lines = 0;
};

// Reads `key` or `key<TAB>count` lines; repeated keys add up. Bad lines are usage errors
// naming the line, so a broken sample is never analysed halfway.
Sample read_sample(std::istream& in, const std::string& name, bool b64) {
  Sample sample;
  std::unordered_map<std::string, size_t> index;
  std::string line;
  uint64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    uint64_t count = 1;
    std::string_view key_text = line;
    if (auto tab = line.rfind('\t'); tab != std::string::npos) {
      std::string_view count_text = std::string_view(line).substr(tab + 1);
      auto [end, ec] =
          std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
      if (count_text.empty() || ec != std::errc() || end != count_text.data() + count_text.size()) {
        throw UsageError(name + ":" + std::to_string(lineno) +
                         ": the text after the last tab must be a count (a non-negative integer)");
      }
      key_text = std::string_view(line).substr(0, tab);
    }
    std::string key(key_text);
    if (b64) {
      auto decoded = hotkey::base64_decode(key);
      if (!decoded) {
        throw UsageError(name + ":" + std::to_string(lineno) + ": key is not valid base64");
      }
      key = std::move(*decoded);
    }
    if (count == 0) continue;
    if (count > std::numeric_limits<uint64_t>::max() - sample.total) {
      throw UsageError(name + ":" + std::to_string(lineno) + ": total count overflows");
    }
    sample.total += count;
    ++sample.lines;
    auto [it, inserted] = index.emplace(key, sample.keys.size());
    if (inserted) {
      sample.keys.push_back({std::move(key), count});
    } else {
      sample.keys[it->second].count += count;
    }
  }
  if (in.bad()) throw UsageError("cannot read " + name + ": read error");
  if (sample.total == 0)
    throw UsageError(name + ": no keys (expected 'key' or 'key<TAB>count' lines)");
  return sample;
}

struct Distribution {
  std::vector<double> load;
  double total = 0;
  double avg = 0;
  double max = 0;
  int32_t max_partition = 0;
  double max_over_avg = 0;
  double max_share = 0;
  int32_t used = 0;  // partitions with any load
  double coverage = 0;
};

Distribution describe(std::vector<double> load) {
  Distribution d;
  for (size_t p = 0; p < load.size(); ++p) {
    d.total += load[p];
    if (load[p] > d.max) {
      d.max = load[p];
      d.max_partition = static_cast<int32_t>(p);
    }
    // Predicted loads are sums of fractions: treat dust as empty.
    if (load[p] > 1e-9) ++d.used;
  }
  d.avg = d.total / static_cast<double>(load.size());
  d.max_over_avg = d.avg > 0 ? d.max / d.avg : 0;
  d.max_share = d.total > 0 ? d.max / d.total : 0;
  d.coverage = static_cast<double>(d.used) / static_cast<double>(load.size());
  d.load = std::move(load);
  return d;
}

Json distribution_json(const Distribution& d) {
  Json j;
  j["load"] = d.load;
  j["max"] = d.max;
  j["max_partition"] = d.max_partition;
  j["avg"] = d.avg;
  j["max_over_avg"] = d.max_over_avg;
  j["max_share"] = d.max_share;
  j["partitions_used"] = d.used;
  j["coverage"] = d.coverage;
  return j;
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

std::string percent(double fraction) { return fixed(100 * fraction, 1) + "%"; }

struct HotKeyPlan {
  const KeyCount* key;
  uint32_t wanted;
  hotkey::SaltTable table;
};

int run_analyze(std::span<const std::string> args, Io io) {
  Flags flags = Flags::parse(args, kAnalyzeFlags);
  hotkey::SaltSpace space;
  space.partitions = partitions_flag(flags);
  space.family = hash_flag(flags);
  space.separator = separator_flag(flags);
  const double hot_factor = flags.number("hot-factor", 0, 1e6, kDefaultHotFactor);
  if (flags.positional().size() != 1) {
    throw UsageError("give exactly one FILE (or - for stdin), got " +
                     std::to_string(flags.positional().size()));
  }
  const std::string& path = flags.positional()[0];
  Sample sample;
  if (path == "-") {
    sample = read_sample(std::cin, "stdin", flags.has("b64"));
  } else {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw UsageError("cannot read " + path + ": " + std::strerror(errno));
    sample = read_sample(file, path, flags.has("b64"));
  }

  const auto np = static_cast<size_t>(space.partitions);
  std::vector<double> before(np, 0.0);
  std::vector<int32_t> partition_of(sample.keys.size());
  for (size_t i = 0; i < sample.keys.size(); ++i) {
    partition_of[i] = hotkey::partition_for(space.family, sample.keys[i].key, space.partitions);
    before[static_cast<size_t>(partition_of[i])] += static_cast<double>(sample.keys[i].count);
  }
  const double total = static_cast<double>(sample.total);
  const double fair = total / static_cast<double>(np);
  // A key above hot_factor x the fair share gets enough salts that each carries at most that
  // much; with one partition there is nowhere to spread to.
  const double threshold = hot_factor * fair;
  std::vector<double> cold = before;
  std::vector<HotKeyPlan> hot;
  if (np > 1) {
    for (size_t i = 0; i < sample.keys.size(); ++i) {
      const double count = static_cast<double>(sample.keys[i].count);
      if (count <= threshold) continue;
      auto wanted = static_cast<uint32_t>(
          std::min<double>(static_cast<double>(np), std::ceil(count / threshold)));
      hot.push_back({&sample.keys[i], wanted, {}});
      cold[static_cast<size_t>(partition_of[i])] -= count;
    }
  }
  std::sort(hot.begin(), hot.end(), [](const HotKeyPlan& a, const HotKeyPlan& b) {
    if (a.key->count != b.key->count) return a.key->count > b.key->count;
    return a.key->key < b.key->key;
  });
  std::vector<hotkey::HotKeyDemand> demands;
  demands.reserve(hot.size());
  for (const HotKeyPlan& h : hot) {
    demands.push_back({h.key->key, static_cast<double>(h.key->count), h.wanted});
  }
  for (double& c : cold) c = std::max(c, 0.0);  // float dust from the subtraction above
  std::vector<hotkey::SaltTable> tables = hotkey::plan_load_aware(cold, demands, space);
  for (size_t i = 0; i < hot.size(); ++i) {
    // Never print a table producers could not reproduce.
    if (!hotkey::verify_table(hot[i].key->key, tables[i], space)) {
      io.err << "hotkeyctl analyze: internal error: salt table for "
             << hotkey::printable_key(hot[i].key->key) << " does not verify\n";
      return kExitFailure;
    }
    hot[i].table = tables[i];
  }
  const Distribution now = describe(before);
  const Distribution after =
      describe(hot.empty() ? before : hotkey::predicted_load(cold, demands, tables));

  std::vector<std::string> warnings;
  if (now.coverage < 0.5) {
    warnings.push_back("coverage " + percent(now.coverage) + " < 50%: only " +
                       std::to_string(now.used) + " of " + std::to_string(np) +
                       " partitions receive records; the sample has too few distinct keys for "
                       "this partition count, or the keys collide");
  }
  if (now.max_over_avg > 2) {
    warnings.push_back("max/avg " + fixed(now.max_over_avg, 2) + " > 2: partition " +
                       std::to_string(now.max_partition) + " carries " + percent(now.max_share) +
                       " of all records");
  }
  if (after.max_over_avg > 2) {
    warnings.push_back("max/avg after salting is still " + fixed(after.max_over_avg, 2) +
                       " > 2: the sample has too few keys for " + std::to_string(np) +
                       " partitions, or the keys need more salts (lower --hot-factor)");
  }
  for (const HotKeyPlan& h : hot) {
    if (h.table.search_limit_reached) {
      warnings.push_back("salt search limit reached for key " + hotkey::printable_key(h.key->key) +
                         ": fewer salts than wanted");
    }
  }

  if (flags.has("json")) {
    Json doc;
    doc["input"] = path == "-" ? "stdin" : path;
    doc["records"] = sample.total;
    doc["distinct_keys"] = sample.keys.size();
    doc["partitions"] = space.partitions;
    doc["hash"] = std::string(hotkey::to_string(space.family));
    doc["separator"] = space.separator;
    doc["hot_factor"] = hot_factor;
    doc["hot_threshold"] = threshold;
    doc["before"] = distribution_json(now);
    doc["after"] = distribution_json(after);
    Json keys = Json::array();
    for (const HotKeyPlan& h : hot) {
      Json k;
      auto enc = hotkey::encode_key(h.key->key);
      k[std::string(enc.field)] = enc.value;
      k["count"] = h.key->count;
      k["share"] = static_cast<double>(h.key->count) / total;
      k["partition"] = hotkey::partition_for(space.family, h.key->key, space.partitions);
      k["salts_wanted"] = h.wanted;
      Json salts = Json::array();
      for (const auto& s : h.table.salts) {
        salts.push_back({{"salt", s.salt}, {"partition", s.partition}, {"weight", s.weight}});
      }
      k["salts"] = std::move(salts);
      k["search_limit_reached"] = h.table.search_limit_reached;
      keys.push_back(std::move(k));
    }
    doc["keys_to_salt"] = std::move(keys);
    doc["warnings"] = warnings;
    io.out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  } else {
    auto& out = io.out;
    out << "sample: " << (path == "-" ? "stdin" : path) << ": " << sample.total << " records, "
        << sample.keys.size() << " distinct keys\n"
        << "topic:  " << np << " partitions, hash " << hotkey::to_string(space.family)
        << ", separator '" << space.separator << "'\n\n";
    out << std::setw(9) << "partition" << std::setw(14) << "records" << std::setw(8) << "share"
        << std::setw(18) << "after salting" << std::setw(8) << "share"
        << "\n";
    for (size_t p = 0; p < np; ++p) {
      out << std::setw(9) << p << std::setw(14) << fixed(now.load[p], 0) << std::setw(8)
          << percent(now.load[p] / now.total) << std::setw(18) << fixed(after.load[p], 0)
          << std::setw(8) << percent(after.total > 0 ? after.load[p] / after.total : 0) << "\n";
    }
    auto summary = [&](const char* label, const Distribution& d) {
      out << label << "max/avg " << fixed(d.max_over_avg, 2) << ", max share "
          << percent(d.max_share) << " (partition " << d.max_partition << "), coverage " << d.used
          << "/" << np << " (" << percent(d.coverage) << ")\n";
    };
    out << "\n";
    summary("before salting: ", now);
    summary("after salting:  ", after);
    out << "\nkeys to salt: " << hot.size();
    if (np > 1) {
      out << " (above " << fixed(hot_factor, 2) << " x the fair share of " << fixed(fair, 1)
          << " records per partition)\n";
    } else {
      out << " (one partition: nothing to spread over)\n";
    }
    if (!hot.empty()) {
      out << "  " << std::left << std::setw(24) << "key" << std::right << std::setw(14) << "records"
          << std::setw(8) << "share" << std::setw(7) << "salts"
          << "  salt->partition (weight)\n";
    }
    for (const HotKeyPlan& h : hot) {
      std::string printable = hotkey::printable_key(h.key->key);
      out << "  " << std::left << std::setw(24) << printable << std::right << std::setw(14)
          << h.key->count << std::setw(8) << percent(static_cast<double>(h.key->count) / total)
          << std::setw(7) << h.table.salts.size() << "  ";
      for (size_t i = 0; i < h.table.salts.size(); ++i) {
        const auto& s = h.table.salts[i];
        out << (i ? " " : "") << s.salt << "->" << s.partition << " ("
            << percent(static_cast<double>(s.weight) / hotkey::kWeightScale) << ")";
      }
      out << "\n";
    }
    if (!warnings.empty()) out << "\n";
    for (const std::string& w : warnings) out << "warning: " << w << "\n";
  }
  return flags.has("fail-on-warn") && !warnings.empty() ? kExitFailure : kExitOk;
}

}  // namespace

const Command kAnalyzeCommand = {
    "analyze",
    "pre-launch check of a key sample: skew, keys to salt, spread after salting",
    "usage: hotkeyctl analyze --partitions N [--hash H] [--json] [FLAGS] FILE|-\n"
    "\n"
    "Reads a key sample, one 'key' or 'key<TAB>count' per line ('-' reads stdin; repeated\n"
    "keys add up; empty lines and a trailing CR are ignored), places every key with the\n"
    "topic's partitioner and reports:\n"
    "  - per-partition load, max/avg, max share and coverage (partitions with records / N);\n"
    "  - the keys to salt: a key is hot above F x the fair share (records / N) and gets\n"
    "    ceil(count / (F x fair share)) salts, capped at N;\n"
    "  - the predicted per-partition load and max/avg after verified, load-aware salting\n"
    "    (salts go to the partitions the other keys leave least loaded, every salt\n"
    "    recomputed with the partitioner).\n"
    "Warns when coverage < 50% or max/avg > 2 (before or after salting).\n"
    "\n"
    "  --partitions N   partition count of the topic, 1..100000 (required)\n"
    "  --hash H         murmur2 (default), crc32, fnv1a\n"
    "  --separator C    salt separator, 1-8 bytes, no digits (default '#')\n"
    "  --hot-factor F   hot-key threshold as a multiple of the fair share (default 0.5)\n"
    "  --json           machine-readable output\n"
    "  --b64            keys in the file are base64 (for binary keys)\n"
    "  --fail-on-warn   exit 1 when there are warnings (for CI gates)\n",
    &run_analyze,
};

}  // namespace hotkeyctl
