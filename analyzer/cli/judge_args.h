// The command line compare and check share: the report directory, --json,
// the report filters, --op-list, --threads, --origin-factor and the
// threshold flags (analyzer/cli/command_line.h declares each command's own).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "analyzer/report/report_filter.h"
#include "analyzer/judge/thresholds.h"

namespace acc::analyzer {

struct JudgeArgs {
  std::string out;  // the command's default report directory
  bool json = false;
  // Progress lines when stderr is not a terminal (a log); on a terminal the
  // bar is always drawn.
  bool progress = false;
  ReportFilter filter;
  std::vector<std::string> op_list;
  unsigned threads = 0;  // 0: one per core
  Thresholds thresholds = defaultThresholds();
  // The threshold flags given, in order, as given: kept with a saved
  // comparison so that merge judges its summary by the same ones.
  std::vector<std::pair<std::string, std::string>> threshold_flags;
  std::vector<std::string> positional;  // the recording directories
};

// Declares the shared options on `app`, filling `a`; the recording
// directories go to a.positional.
void addJudgeOptions(CLI::App& app, JudgeArgs& a);
// Only those of them that shape the reports: -o, --json, --progress,
// --only-failed (merge, whose rows were judged before).
void addReportOptions(CLI::App& app, JudgeArgs& a);
// --min-cosine X, the filter compare and merge take.
void addMinCosineOption(CLI::App& app, JudgeArgs& a);

}  // namespace acc::analyzer
