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

// Every command by the name the user types: main dispatches on it, and the
// docs test asks README.md to document each one.
struct Command {
  const char* name;
  int (*run)(const std::vector<std::string>& args);
};
inline constexpr Command kCommands[] = {
    {"list", listCommand},       {"compare", compareCommand}, {"check", checkCommand},
    {"show", showCommand},       {"export", exportCommand},   {"repro", reproCommand},
};

}  // namespace acc::analyzer
