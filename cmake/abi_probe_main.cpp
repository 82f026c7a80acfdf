// Built and run at configure time (cmake/TorchAbi.cmake) to find the NDEBUG
// setting under which at::RecordFunction matches the installed libtorch.
#include <cstdio>

#include "recorder/session/abi_check.h"

int main() {
  std::string problem = acc::recorder::recordFunctionLayoutProblem();
  std::printf("%s\n", problem.empty() ? "layout matches" : problem.c_str());
  return problem.empty() ? 0 : 1;
}
