// End-to-end test harness: runs real programs (Python with torch, the C++
// example) with and without LD_PRELOAD=libacc.so and reads what they recorded.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "format/record.h"
#include "tests/temp_dir.h"

namespace acc::test {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

struct Command {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // added to the test's environment minus ACC_*
  std::string cwd;                          // empty: the test's working directory
  bool preload = true;                      // LD_PRELOAD=libacc.so
  std::string preload_lib;                  // overrides the built libacc.so
};

RunResult run(const Command& command);
// Runs build/bin/acc-analyzer with `args` (no preload).
RunResult analyzer(const std::vector<std::string>& args);

// Paths of the build and the source tree.
std::string python();  // the interpreter with torch, found by CMake
std::string example(const std::string& file);
std::string sourceFile(const std::string& path);  // relative to the source tree's root
std::string testScript(const std::string& file);
std::string testData(const std::string& path);  // under tests/data
std::string libDir();
std::string binDir();

// Runs examples/mlp_train.py (or another script) under the recorder with
// `env`, output in `dir`; ACC_QUIET is not set, so stderr has acc's lines.
RunResult recordPython(const std::string& script, const std::string& dir,
                       std::map<std::string, std::string> env = {});
RunResult runPythonPlain(const std::string& script, std::map<std::string, std::string> env = {});

struct Recording {
  nlohmann::json manifest;
  std::vector<format::OpRecord> records;  // execution order
  std::map<uint64_t, format::StackRecord> stacks;
  bool damaged = false;

  std::vector<const format::OpRecord*> named(const std::string& prefix) const;
  const format::OpRecord* find(const std::string& name) const;
  std::vector<std::string> names() const;
};

// Reads one rank directory (dir/rankN) completely, tensor data included.
Recording readRank(const std::string& rank_dir);

std::string readFile(const std::string& path);
bool exists(const std::string& path);

// The "step N loss X" lines a training script printed, without the step's
// " time T" where it prints one: what must be bit-identical between runs.
std::vector<std::string> lossLines(const std::string& out);
// A program's output without acc's own "acc: " lines: what it printed itself.
std::string withoutAccLines(const std::string& text);
// The same text with the time and thread id that torch's own log lines
// start with ("W1127 03:35:16.666000 8574 torch/...") cut to their level
// letter, so that two runs' stderr compare equal when they said the same.
std::string withoutLogStamps(const std::string& text);

// "2.6" of "2.6.0+debian": torch versions as the tests compare them.
std::string majorMinor(const std::string& version);

}  // namespace acc::test
