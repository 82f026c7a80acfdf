#include "analyzer/cli/command_line.h"

#include <cstdlib>
#include <iostream>

#include "analyzer/cli/commands.h"

namespace acc::analyzer {

CommandLine::CommandLine(std::string command, const char* usage)
    : command_(std::move(command)), usage_(usage), app_("acc-analyzer " + command_) {
  app_.set_help_flag("-h,--help");
}

std::optional<int> CommandLine::parse(const std::vector<std::string>& args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app_.parse(reversed);
    return std::nullopt;
  } catch (const CLI::CallForHelp&) {
    std::cout << usage_;
    return kExitOk;
  } catch (const CLI::ExtrasError& e) {
    const std::vector<std::string>& extras = app_.remaining();
    const std::string first = extras.empty() ? std::string() : extras.front();
    std::cerr << "acc-analyzer " << command_ << ": "
              << (!first.empty() && first[0] == '-' ? "unknown option " + first : "unexpected argument " + first)
              << "\n\n" << usage_;
  } catch (const CLI::ArgumentMismatch& e) {
    // A value missing: the option is the first word of CLI11's message.
    const std::string what = e.what();
    std::cerr << "acc-analyzer " << command_ << ": " << what.substr(0, what.find(':')) << " needs a value\n\n" << usage_;
  } catch (const CLI::ParseError& e) {
    std::cerr << "acc-analyzer " << command_ << ": " << e.what() << "\n\n" << usage_;
  }
  return kExitInput;
}

CLI::Option* addChecked(CLI::App& app, const std::string& name, std::function<std::string(const std::string&)> apply) {
  // Every occurrence is applied in order (a repeatable option collects,
  // another one keeps the last).
  return app.add_option_function<std::vector<std::string>>(name, [apply = std::move(apply)](const std::vector<std::string>& values) {
    for (const std::string& value : values) {
      if (std::string error = apply(value); !error.empty()) throw CLI::ValidationError(error);
    }
  })
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->expected(1)
      // One value per occurrence: "--memory-mb 100 DIR0 DIR1" leaves the
      // directories to the positionals (a vector option takes every word
      // up to the next option by default).
      ->allow_extra_args(false);
}

std::string parseWhole(const std::string& what, const std::string& value, int64_t min, int64_t& out) {
  char* end = nullptr;
  const long long n = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || n < min) {
    return what + " expects a whole number" + (min == 0 ? " >= 0" : min > 0 ? " >= " + std::to_string(min) : "") +
           ", got '" + value + "'";
  }
  out = n;
  return "";
}

}  // namespace acc::analyzer
