// What compare and merge print and write once a comparison's result is at
// hand: the recording notes, the reports, the verdict on the terminal and
// the exit code.
#pragma once

#include <array>
#include <string>

#include "analyzer/cli/judge_args.h"
#include "analyzer/common/result.h"
#include "analyzer/compare/progress.h"

namespace acc::analyzer {

// Writes `result`'s reports into args.out and prints its verdict (or
// summary.json with --json); `dirs`: DIR0 and DIR1 as the user named them.
// `save`: the judged rows are kept in args.out for merge (saved_result.h).
// Returns the exit code: 0 no divergence, 1 divergence, 2 input error.
int reportComparison(const JudgeArgs& args, CompareResult& result, const std::array<std::string, 2>& dirs,
                     ProgressReporter& progress, bool save);

}  // namespace acc::analyzer
