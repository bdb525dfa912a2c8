// Offline commands that need only the partitioner families: where keys land, and verified
// salt tables. Nothing here talks to a coordinator or a broker.
#include <array>
#include <iostream>
#include <nlohmann/json.hpp>

#include "command.h"
#include "flags.h"
#include "hotkey/key_codec.h"
#include "hotkey/partitioner.h"
#include "hotkey/salt_planner.h"

namespace hotkeyctl {
namespace {

constexpr std::array kPartitionFlags = {
    FlagSpec{"partitions", true},
    FlagSpec{"hash", true},
    FlagSpec{"b64", false},
};

int run_partition(std::span<const std::string> args, Io io) {
  Flags flags = Flags::parse(args, kPartitionFlags);
  int32_t partitions = partitions_flag(flags);
  hotkey::HashFamily family = hash_flag(flags);
  if (flags.positional().empty()) throw UsageError("give at least one KEY");
  const bool b64 = flags.has("b64");
  // Decode everything first so a bad key prints nothing rather than half the answer.
  std::vector<std::string> keys;
  for (const std::string& arg : flags.positional()) keys.push_back(key_arg(arg, b64));
  for (size_t i = 0; i < keys.size(); ++i) {
    io.out << flags.positional()[i] << '\t' << hotkey::partition_for(family, keys[i], partitions)
           << '\n';
  }
  return kExitOk;
}

constexpr std::array kSaltsFlags = {
    FlagSpec{"partitions", true}, FlagSpec{"count", true},        FlagSpec{"hash", true},
    FlagSpec{"separator", true},  FlagSpec{"search-limit", true}, FlagSpec{"b64", false},
};

int run_salts(std::span<const std::string> args, Io io) {
  Flags flags = Flags::parse(args, kSaltsFlags);
  hotkey::SaltSpace space;
  space.partitions = partitions_flag(flags);
  space.family = hash_flag(flags);
  space.separator = separator_flag(flags);
  space.search_limit = static_cast<uint32_t>(
      flags.integer("search-limit", 1, UINT32_MAX, int64_t{space.search_limit}));
  auto count = static_cast<uint32_t>(flags.integer("count", 1, kMaxPartitions));
  if (flags.positional().size() != 1) {
    throw UsageError("give exactly one KEY (got " + std::to_string(flags.positional().size()) +
                     ")");
  }
  std::string key = key_arg(flags.positional()[0], flags.has("b64"));
  hotkey::SaltTable table = hotkey::plan_salts(key, count, space);
  // The table is for pasting into configs: recheck it with the partitioner before printing.
  if (!hotkey::verify_table(key, table, space)) {
    io.err << "hotkeyctl salts: internal error: the planned table does not verify\n";
    return kExitFailure;
  }
  nlohmann::ordered_json doc;
  auto enc = hotkey::encode_key(key);
  doc[std::string(enc.field)] = enc.value;
  doc["hash"] = std::string(hotkey::to_string(space.family));
  doc["partitions"] = space.partitions;
  doc["separator"] = space.separator;
  doc["requested"] = count;
  nlohmann::ordered_json salts = nlohmann::ordered_json::array();
  for (const hotkey::SaltAssignment& s : table.salts) {
    salts.push_back({{"salt", s.salt}, {"partition", s.partition}, {"weight", s.weight}});
  }
  doc["salts"] = std::move(salts);
  doc["search_limit_reached"] = table.search_limit_reached;
  io.out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  const uint32_t want = std::min<uint32_t>(count, static_cast<uint32_t>(space.partitions));
  if (table.salts.size() < want) {
    io.err << "hotkeyctl salts: found " << table.salts.size() << " of " << want
           << " salts on distinct partitions within --search-limit " << space.search_limit
           << "; raise it to find more\n";
    return kExitFailure;
  }
  if (count > want) {
    io.err << "hotkeyctl salts: note: --count " << count << " capped at " << want
           << " (one salt per partition)\n";
  }
  return kExitOk;
}

}  // namespace

const Command kPartitionCommand = {
    "partition",
    "print the partition each KEY lands on",
    "usage: hotkeyctl partition --partitions N [--hash H] [--b64] KEY...\n"
    "\n"
    "Prints KEY<TAB>PARTITION for each KEY, computed exactly as the producers' partitioner\n"
    "does (Java client / librdkafka).\n"
    "\n"
    "  --partitions N  partition count of the topic, 1..100000 (required)\n"
    "  --hash H        murmur2 (default, Java client), crc32 (librdkafka consistent),\n"
    "                  fnv1a (librdkafka fnv1a, sarama)\n"
    "  --b64           each KEY is the base64 of the key bytes (for binary keys)\n"
    "  --              end of flags (for keys that start with '-')\n"
    "\n"
    "example: hotkeyctl partition --partitions 12 tenant-1 tenant-2\n",
    &run_partition,
};

const Command kSaltsCommand = {
    "salts",
    "print a verified salt table for one KEY (JSON)",
    "usage: hotkeyctl salts --partitions N --count S [--hash H] [--separator C] [--b64] KEY\n"
    "\n"
    "Finds S salts for KEY whose salted keys KEY<C><salt> land on S distinct partitions\n"
    "(salts tried in increasing order, every one recomputed with the family's partitioner)\n"
    "and prints the table as JSON: {key|key_b64, hash, partitions, separator, requested,\n"
    "salts: [{salt, partition, weight}], search_limit_reached}.\n"
    "\n"
    "  --partitions N    partition count of the topic, 1..100000 (required)\n"
    "  --count S         salts wanted (required); capped at N\n"
    "  --hash H          murmur2 (default), crc32, fnv1a\n"
    "  --separator C     between key and salt, 1-8 bytes, no digits (default '#')\n"
    "  --search-limit L  try salts 0..L-1 (default 65536)\n"
    "  --b64             KEY is the base64 of the key bytes\n"
    "\n"
    "Exit 1 when fewer than min(S, N) salts were found within the search limit.\n",
    &run_salts,
};

}  // namespace hotkeyctl
