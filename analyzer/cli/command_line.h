// acc-analyzer's command lines, parsed by CLI11. Each command declares its
// options and positional arguments on a CLI::App; CommandLine keeps acc's
// conventions: -h/--help prints the command's own usage text on stdout
// (exit 0), and a command line that does not parse gets one line,
// "acc-analyzer CMD: WHAT", then the usage, on stderr (exit 2).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace acc::analyzer {

class CommandLine {
 public:
  CommandLine(std::string command, const char* usage);
  CLI::App& app() { return app_; }
  // nullopt when the command should run; else its exit code.
  std::optional<int> parse(const std::vector<std::string>& args);

 private:
  std::string command_;
  const char* usage_;
  CLI::App app_;
};

// An option whose value `apply` takes, returning an error message ("" when
// it took it): the message is the line the user sees.
CLI::Option* addChecked(CLI::App& app, const std::string& name,
                        std::function<std::string(const std::string& value)> apply);

// Whole numbers >= `min` (`what` names the option in messages: "--rank").
std::string parseWhole(const std::string& what, const std::string& value, int64_t min, int64_t& out);

}  // namespace acc::analyzer
