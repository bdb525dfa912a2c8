// A fresh directory under the system temp dir for one test or benchmark run.
#pragma once

#include <filesystem>
#include <string>

namespace hotkey::test_support {

// Created by the constructor (mkdtemp, so never shared with another run), removed with
// everything in it by the destructor. Not thread-safe; not copyable.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "hotkey-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The whole content of a file ("" when it cannot be read).
std::string read_file(const std::filesystem::path& path);

}  // namespace hotkey::test_support
