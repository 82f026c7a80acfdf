#include <malloc.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "analyzer/cli/commands.h"

namespace {

// The usage text, its commands from kCommands.
std::string usage() {
  std::string u =
      "usage: acc-analyzer COMMAND [ARGS]\n"
      "\n"
      "Reads recordings made by libacc.so (LD_PRELOAD=libacc.so python train.py).\n"
      "\n"
      "commands:\n";
  for (const auto& c : acc::analyzer::kCommands) u += c.synopsis;
  return u +
         "\n"
         "`acc-analyzer COMMAND --help` describes one command.\n"
         "Exit codes: 0 success, 1 divergence found (compare) or a wrong kernel (check),\n"
         "2 usage or input error.\n";
}

}  // namespace

int main(int argc, char** argv) {
  // Tensor buffers of many MiB come and go. glibc raises its mmap threshold
  // up to 32 MiB after the first frees and then keeps freed buffers in
  // per-thread arenas, so compare would hold far more than --memory-mb; a
  // fixed threshold gives them back to the system as soon as they are freed.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    (argc < 2 ? std::cerr : std::cout) << usage();
    return argc < 2 ? acc::analyzer::kExitInput : acc::analyzer::kExitOk;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::cout << "acc-analyzer " << ACC_VERSION << "\n";
    return 0;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const auto& c : acc::analyzer::kCommands) {
    if (command == c.name) return c.run(args);
  }
  std::cerr << "acc-analyzer: unknown command '" << command << "'\n" << usage();
  return acc::analyzer::kExitInput;
}
