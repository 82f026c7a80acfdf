// The recorder core's only entry point, called by the preload shim once the
// process has loaded the torch this core was built against.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "env/config.h"
#include "recorder/session/abi_check.h"
#include "recorder/session/session.h"

extern "C" __attribute__((visibility("default"))) int acc_core_start() {
  using namespace acc;
  try {
    env::ParseResult parsed = env::parseProcessEnvironment();
    if (!parsed.ok() || !parsed.config.enabled) return 1;  // the shim reported why
    std::string problem = recorder::recordFunctionLayoutProblem();
    if (!problem.empty()) {
      std::fprintf(stderr,
                   "acc: the running torch does not match the one acc was built with (%s); "
                   "rebuild acc against it (scripts/setup.sh); recording is off\n",
                   problem.c_str());
      return 1;
    }
    const env::Config& c = parsed.config;
    int64_t rank = env::processRank([](const char* n) { return std::getenv(n); });
    std::string dir = c.output_dir + "/rank" + std::to_string(rank);
    return recorder::Session::start(c, rank, dir) != nullptr ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "acc: recorder failed to start (%s); recording is off\n", e.what());
    return 1;
  }
}
