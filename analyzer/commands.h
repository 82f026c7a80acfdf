// acc-analyzer's subcommands; each returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace acc::analyzer {

constexpr int kExitOk = 0;
constexpr int kExitFound = 1;  // compare: a divergence was found
constexpr int kExitInput = 2;  // usage or input error

int listCommand(const std::vector<std::string>& args);
int compareCommand(const std::vector<std::string>& args);
int checkCommand(const std::vector<std::string>& args);
int showCommand(const std::vector<std::string>& args);
int exportCommand(const std::vector<std::string>& args);
int reproCommand(const std::vector<std::string>& args);

}  // namespace acc::analyzer
