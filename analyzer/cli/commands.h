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
int mergeCommand(const std::vector<std::string>& args);

// Every command by the name the user types: main dispatches on it and lists
// each synopsis in its usage, and the docs test asks README.md to document
// each one.
struct Command {
  const char* name;
  int (*run)(const std::vector<std::string>& args);
  const char* synopsis;  // its lines of `acc-analyzer --help`
};
inline constexpr Command kCommands[] = {
    {"list", listCommand, "  list DIR [--json] [--stacks]   records in execution order\n"},
    {"compare", compareCommand, "  compare DIR0 DIR1 [-o OUT]     the op where DIR1 starts to differ from DIR0\n"},
    {"merge", mergeCommand,
     "  merge OUT... [-o MERGED]       one verdict and report from comparisons of\n"
     "                                 separate ranks (compare --ranks)\n"},
    {"check", checkCommand,
     "  check DIR [-o OUT]             ops whose kernel does not reproduce its own\n"
     "                                 output when run again on the CPU (level 2)\n"},
    {"show", showCommand, "  show DIR NAME [--json]         one record: tensors, statistics, stack\n"},
    {"export", exportCommand,
     "  export DIR -o OUT              tensor data as .npy files (level 2), or the\n"
     "                                 recording as an msprobe dump (--format msprobe)\n"},
    {"repro", reproCommand,
     "  repro DIR NAME -o OUT          one op's inputs and a Python script that runs\n"
     "                                 it on a device against float64 (level 2)\n"},
};

}  // namespace acc::analyzer
