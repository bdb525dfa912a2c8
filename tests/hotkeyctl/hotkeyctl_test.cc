// Runs the real hotkeyctl binary and checks its output and exit codes; the expected
// partitions come from the partitioner library, which is itself tested against librdkafka.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hotkey/key_codec.h"
#include "hotkey/partitioner.h"
#include "support/child_process.h"
#include "support/coordinator_process.h"

namespace hotkey {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using Result = test_support::Captured;

class Hotkeyctl : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hotkeyctl_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& content) {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

  // Runs hotkeyctl with `args`; stdin comes from `stdin_text`. Output goes to files, not
  // pipes, so a large output can never block the child.
  Result run(const std::vector<std::string>& args, const std::string& stdin_text = "") {
    test_support::ChildSpec spec;
    spec.binary = test_support::built_binary("hotkeyctl");
    spec.args = args;
    return test_support::run_capturing(spec, dir_, stdin_text);
  }

  fs::path dir_;
};

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST_F(Hotkeyctl, HelpListsCommands) {
  Result r = run({"--help"});
  EXPECT_EQ(r.code, 0);
  for (const char* c : {"partition", "salts", "analyze"}) EXPECT_TRUE(contains(r.out, c)) << c;
  r = run({});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "usage: hotkeyctl COMMAND"));
  for (const char* c : {"partition", "salts", "analyze"}) {
    r = run({c, "--help"});
    EXPECT_EQ(r.code, 0) << c;
    EXPECT_TRUE(contains(r.out, std::string("usage: hotkeyctl ") + c)) << r.out;
    Result h = run({"help", c});
    EXPECT_EQ(h.code, 0);
    EXPECT_EQ(h.out, r.out);
  }
  r = run({"frobnicate"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "unknown command 'frobnicate'"));
  r = run({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(contains(r.out, "hotkeyctl "));
}

TEST_F(Hotkeyctl, PartitionMatchesEveryFamily) {
  const std::vector<std::string> keys = {"tenant-1", "tenant-2", "", "caf\xc3\xa9", "a#b"};
  for (auto family : {HashFamily::kMurmur2, HashFamily::kCrc32, HashFamily::kFnv1a}) {
    std::vector<std::string> args = {"partition", "--partitions", "12", "--hash",
                                     std::string(to_string(family))};
    args.insert(args.end(), keys.begin(), keys.end());
    Result r = run(args);
    ASSERT_EQ(r.code, 0) << r.err;
    std::string want;
    for (const auto& k : keys)
      want += k + "\t" + std::to_string(partition_for(family, k, 12)) + "\n";
    EXPECT_EQ(r.out, want) << to_string(family);
  }
  // murmur2 is the default; --partitions=N works too.
  Result r = run({"partition", "--partitions=1000", "seller-42"});
  EXPECT_EQ(r.out, "seller-42\t" +
                       std::to_string(partition_for(HashFamily::kMurmur2, "seller-42", 1000)) +
                       "\n");
}

TEST_F(Hotkeyctl, PartitionOfBinaryAndDashKeys) {
  std::string binary("\x00\xff\x80\x01", 4);
  std::string b64 = base64_encode(binary);
  Result r = run({"partition", "--partitions", "7", "--b64", b64});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            b64 + "\t" + std::to_string(partition_for(HashFamily::kMurmur2, binary, 7)) + "\n");
  r = run({"partition", "--partitions", "7", "--", "-key", "--b64"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "-key\t" + std::to_string(partition_for(HashFamily::kMurmur2, "-key", 7)) +
                       "\n--b64\t" +
                       std::to_string(partition_for(HashFamily::kMurmur2, "--b64", 7)) + "\n");
}

TEST_F(Hotkeyctl, BadFlagsExitTwoWithAMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"partition", "k"}, "--partitions is required"},
      {{"partition", "--partitions"}, "--partitions needs a value"},
      {{"partition", "--partitions", "0", "k"},
       "--partitions: '0' is not an integer in [1, 100000]"},
      {{"partition", "--partitions", "12x", "k"}, "'12x' is not an integer"},
      {{"partition", "--partitions", "12", "--hash", "md5", "k"}, "--hash: unknown family 'md5'"},
      {{"partition", "--partitions", "12"}, "give at least one KEY"},
      {{"partition", "--partitions", "12", "--partitions", "3", "k"}, "--partitions given twice"},
      {{"partition", "--partitions", "12", "--nope", "k"}, "unknown flag --nope"},
      {{"partition", "--partitions", "12", "-x", "k"}, "unknown flag '-x'"},
      {{"partition", "--partitions", "12", "--b64", "!!"}, "'!!' is not valid base64"},
      {{"partition", "--partitions", "12", "--b64=yes", "k"}, "--b64 takes no value"},
      {{"salts", "--partitions", "12", "k"}, "--count is required"},
      {{"salts", "--partitions", "12", "--count", "3"}, "give exactly one KEY (got 0)"},
      {{"salts", "--partitions", "12", "--count", "3", "a", "b"}, "give exactly one KEY (got 2)"},
      {{"salts", "--partitions", "12", "--count", "3", "--separator", "9", "k"},
       "--separator: '9' must be 1-8 bytes with no decimal digit"},
      {{"salts", "--partitions", "12", "--count", "0", "k"}, "--count: '0' is not an integer"},
      {{"analyze", "--partitions", "12"}, "give exactly one FILE (or - for stdin), got 0"},
      {{"analyze", "--partitions", "12", "--hot-factor", "0", "-"}, "--hot-factor: '0'"},
      {{"analyze", "--partitions", "12", "/nonexistent/sample.txt"},
       "cannot read /nonexistent/sample.txt: No such file or directory"},
  };
  for (const Case& c : cases) {
    Result r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args[0] << " " << c.message;
    EXPECT_TRUE(contains(r.err, c.message)) << "stderr: " << r.err << "\nwant: " << c.message;
    EXPECT_EQ(r.out, "") << c.message;
  }
}

// Every salt of the printed table, recomputed with the partitioner on key<sep><salt>.
void expect_verified(const json& doc, const std::string& key, HashFamily family, int32_t p,
                     const std::string& sep, size_t want) {
  ASSERT_EQ(doc.at("salts").size(), want) << doc.dump();
  std::set<int32_t> partitions;
  uint64_t weights = 0;
  for (const auto& s : doc.at("salts")) {
    auto salt = s.at("salt").get<uint32_t>();
    auto partition = s.at("partition").get<int32_t>();
    EXPECT_EQ(partition_for(family, salted_key(key, sep, salt), p), partition) << s.dump();
    partitions.insert(partition);
    weights += s.at("weight").get<uint32_t>();
  }
  EXPECT_EQ(partitions.size(), want);
  EXPECT_EQ(weights, 10000u);
}

TEST_F(Hotkeyctl, SaltsPrintsAVerifiedTable) {
  for (auto family : {HashFamily::kMurmur2, HashFamily::kCrc32, HashFamily::kFnv1a}) {
    Result r = run({"salts", "--partitions", "32", "--count", "8", "--hash",
                    std::string(to_string(family)), "--separator", "::", "seller-9"});
    ASSERT_EQ(r.code, 0) << r.err;
    json doc = json::parse(r.out);
    EXPECT_EQ(doc.at("key"), "seller-9");
    EXPECT_EQ(doc.at("hash"), to_string(family));
    EXPECT_EQ(doc.at("partitions"), 32);
    EXPECT_EQ(doc.at("separator"), "::");
    EXPECT_EQ(doc.at("search_limit_reached"), false);
    expect_verified(doc, "seller-9", family, 32, "::", 8);
  }
}

TEST_F(Hotkeyctl, SaltsCapsAtPartitionsAndHandlesBinaryKeys) {
  std::string binary("\xff\x00k", 3);
  Result r = run({"salts", "--partitions", "5", "--count", "9", "--b64", base64_encode(binary)});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "capped at 5"));
  json doc = json::parse(r.out);
  EXPECT_EQ(doc.at("key_b64"), base64_encode(binary));
  expect_verified(doc, binary, HashFamily::kMurmur2, 5, "#", 5);
}

TEST_F(Hotkeyctl, SaltsReportsTheSearchLimit) {
  Result r = run({"salts", "--partitions", "64", "--count", "64", "--search-limit", "3", "k"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.err, "within --search-limit 3")) << r.err;
  json doc = json::parse(r.out);
  EXPECT_EQ(doc.at("search_limit_reached"), true);
  EXPECT_LE(doc.at("salts").size(), 3u);
}

// A skewed sample: two heavy tenants and a long tail.
std::string skewed_sample() {
  std::string s = "tenant-1\t40000\ntenant-2\t15000\n";
  for (int i = 0; i < 2000; ++i)
    s += "user-" + std::to_string(i) + "\t" + std::to_string(1 + i % 40) + "\n";
  s += "tenant-2\n";  // repeated keys add up, a bare key counts one
  s += "\r\n\n";      // blank lines (also CRLF) are skipped
  return s;
}

TEST_F(Hotkeyctl, AnalyzeJsonMatchesTheSample) {
  fs::path sample = write("sample.txt", skewed_sample());
  Result r = run({"analyze", "--partitions", "12", "--json", sample.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  json doc = json::parse(r.out);
  uint64_t total = 40000 + 15001;
  std::vector<double> load(12, 0);
  load[partition_for(HashFamily::kMurmur2, "tenant-1", 12)] += 40000;
  load[partition_for(HashFamily::kMurmur2, "tenant-2", 12)] += 15001;
  for (int i = 0; i < 2000; ++i) {
    total += 1 + i % 40;
    load[partition_for(HashFamily::kMurmur2, "user-" + std::to_string(i), 12)] += 1 + i % 40;
  }
  EXPECT_EQ(doc.at("records"), total);
  EXPECT_EQ(doc.at("distinct_keys"), 2002);
  const json& before = doc.at("before");
  EXPECT_EQ(before.at("load").get<std::vector<double>>(), load);
  double max = *std::max_element(load.begin(), load.end());
  EXPECT_DOUBLE_EQ(before.at("max_over_avg").get<double>(), max / (double(total) / 12));
  EXPECT_DOUBLE_EQ(before.at("max_share").get<double>(), max / double(total));
  EXPECT_EQ(before.at("partitions_used"), 12);

  // Both tenants exceed half the fair share; the tail does not.
  const json& keys = doc.at("keys_to_salt");
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].at("key"), "tenant-1");
  EXPECT_EQ(keys[1].at("key"), "tenant-2");
  double threshold = 0.5 * double(total) / 12;
  EXPECT_EQ(keys[0].at("salts_wanted"), uint32_t(std::ceil(40000 / threshold)));
  for (const auto& k : keys) {
    std::set<int32_t> used;
    for (const auto& s : k.at("salts")) {
      EXPECT_EQ(
          partition_for(
              HashFamily::kMurmur2,
              salted_key(k.at("key").get<std::string>(), "#", s.at("salt").get<uint32_t>()), 12),
          s.at("partition").get<int32_t>());
      used.insert(s.at("partition").get<int32_t>());
    }
    EXPECT_EQ(used.size(), k.at("salts").size());
    EXPECT_LE(k.at("salts").size(), k.at("salts_wanted").get<size_t>());
  }
  // Salting keeps every record and flattens the distribution.
  const json& after = doc.at("after");
  double after_total = 0;
  for (double v : after.at("load").get<std::vector<double>>()) after_total += v;
  EXPECT_NEAR(after_total, double(total), 1e-6 * double(total));
  EXPECT_LT(after.at("max_over_avg").get<double>(), 1.5);
  ASSERT_EQ(doc.at("warnings").size(), 1u);
  EXPECT_TRUE(contains(doc.at("warnings")[0].get<std::string>(), "max/avg"));
}

TEST_F(Hotkeyctl, AnalyzeHumanOutputFromStdin) {
  Result r = run({"analyze", "--partitions", "12", "-"}, skewed_sample());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "sample: stdin: "));
  EXPECT_TRUE(contains(r.out, "2002 distinct keys"));
  EXPECT_TRUE(contains(r.out, "keys to salt: 2"));
  EXPECT_TRUE(contains(r.out, "before salting: max/avg"));
  EXPECT_TRUE(contains(r.out, "after salting:  max/avg"));
  EXPECT_TRUE(contains(r.out, "tenant-1"));
  EXPECT_TRUE(contains(r.out, "warning: max/avg"));
  // The JSON and the human form come from the same analysis.
  Result j = run({"analyze", "--partitions", "12", "--json", "-"}, skewed_sample());
  json doc = json::parse(j.out);
  std::ostringstream want;
  want << "max/avg " << std::fixed << std::setprecision(2)
       << doc.at("before").at("max_over_avg").get<double>();
  EXPECT_TRUE(contains(r.out, want.str())) << want.str();
}

TEST_F(Hotkeyctl, AnalyzeWarnsOnLowCoverageAndCanFail) {
  fs::path sample = write("few.txt", "a\t10\nb\t10\nc\t10\n");
  Result r = run({"analyze", "--partitions", "64", "--json", sample.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  json doc = json::parse(r.out);
  bool coverage_warning = false;
  for (const auto& w : doc.at("warnings")) {
    coverage_warning |= contains(w.get<std::string>(), "coverage");
  }
  EXPECT_TRUE(coverage_warning) << doc.at("warnings").dump();
  r = run({"analyze", "--partitions", "64", "--fail-on-warn", sample.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.out, "warning: coverage"));
}

TEST_F(Hotkeyctl, AnalyzeOnePartitionHasNothingToSalt) {
  Result r = run({"analyze", "--partitions", "1", "--json", "-"}, "hot\t100\ncold\n");
  ASSERT_EQ(r.code, 0) << r.err;
  json doc = json::parse(r.out);
  EXPECT_EQ(doc.at("keys_to_salt").size(), 0u);
  EXPECT_EQ(doc.at("before").at("max_over_avg"), 1.0);
  EXPECT_EQ(doc.at("warnings").size(), 0u);
}

TEST_F(Hotkeyctl, AnalyzeBinaryKeys) {
  std::string binary("\x00\xfe", 2);
  std::string text = base64_encode(binary) + "\t500\n" + base64_encode("x") + "\t1\n";
  Result r = run({"analyze", "--partitions", "4", "--b64", "--json", "-"}, text);
  ASSERT_EQ(r.code, 0) << r.err;
  json doc = json::parse(r.out);
  ASSERT_EQ(doc.at("keys_to_salt").size(), 1u);
  EXPECT_EQ(doc.at("keys_to_salt")[0].at("key_b64"), base64_encode(binary));
  r = run({"analyze", "--partitions", "4", "-"}, std::string("\xff\x01key\t5\n", 7));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "\\xff\\x01key")) << r.out;
}

TEST_F(Hotkeyctl, AnalyzeRejectsBadInputWithTheLine) {
  fs::path bad = write("bad.txt", "a\t1\nb\t2\nc\tmany\n");
  Result r = run({"analyze", "--partitions", "4", bad.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, bad.string() + ":3: the text after the last tab must be a count"))
      << r.err;
  EXPECT_EQ(r.out, "");
  r = run({"analyze", "--partitions", "4", "-"}, "a\t-1\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "stdin:1:"));
  r = run({"analyze", "--partitions", "4", "-"}, "\n\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "stdin: no keys"));
  r = run({"analyze", "--partitions", "4", "-"}, "a\t18446744073709551615\nb\t1\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "stdin:2: total count overflows"));
  r = run({"analyze", "--partitions", "4", dir_.string()});  // a directory is not a sample
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "cannot read")) << r.err;
}

}  // namespace
}  // namespace hotkey
