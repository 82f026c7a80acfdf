// tests/scripts/device_train.py on the test accelerator: the environment
// that puts it there and the device counters the script prints at its end.
// For test targets that define ACC_TESTDEV_LIB (the plugin's path).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "tests/e2e/harness.h"

namespace acc::test {

using Env = std::map<std::string, std::string>;

inline std::string script() { return testScript("device_train.py"); }

inline Env onDevice(Env env = {}) {
  env["DEVICE"] = "testdev";
  env["TESTDEV_LIB"] = ACC_TESTDEV_LIB;
  return env;
}

// The line `counters {...}`: blocking copies, scalar reads, synchronisations,
// events and kernels counted by the test device; null without one.
inline nlohmann::json counters(const std::string& out) {
  const auto at = out.find("counters ");
  if (at == std::string::npos) return nullptr;
  return nlohmann::json::parse(out.substr(at + 9, out.find('\n', at) - at - 9));
}

}  // namespace acc::test
