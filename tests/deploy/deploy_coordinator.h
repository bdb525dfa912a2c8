// The deploy tests' coordinator: the shared launcher (tests/support) with both tokens in the
// environment, as a deployment passes them.
#pragma once

#include <filesystem>
#include <string>

#include "support/coordinator_process.h"

namespace hotkey::deploy_test {

inline constexpr const char* kOperatorToken = "deploy-test-operator-token";
inline constexpr const char* kProducerToken = "deploy-test-producer-token";

inline test_support::CoordinatorOptions deploy_options(const std::string& binary,
                                                       const std::filesystem::path& data,
                                                       const std::filesystem::path& log) {
  test_support::CoordinatorOptions o;
  o.binary = binary;
  o.data = data;
  o.log = log;
  o.env = {{"HOTKEY_OPERATOR_TOKEN", kOperatorToken}, {"HOTKEY_PRODUCER_TOKEN", kProducerToken}};
  return o;
}

}  // namespace hotkey::deploy_test
