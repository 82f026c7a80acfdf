// acc-analyzer merge: the comparisons of a job's ranks, made in separate
// processes (compare --ranks), joined into one verdict and one report.
#include <iostream>

#include "analyzer/cli/command_line.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/compare_verdict.h"
#include "analyzer/cli/judge_args.h"
#include "analyzer/compare/saved_result.h"
#include "analyzer/read/recording.h"

namespace acc::analyzer {
namespace {

constexpr const char* kMergeUsage =
    "usage: acc-analyzer merge OUT... [-o MERGED] [options]\n"
    "\n"
    "Joins comparisons of the same two recordings, each of some of their\n"
    "ranks (acc-analyzer compare --ranks LIST -o OUT), into one verdict and\n"
    "one report: the same first divergence, origins and reports as one\n"
    "comparison of all those ranks. Each OUT is a compare report directory;\n"
    "compare keeps its judged rows there (rows/, result.json) for merge.\n"
    "A rank may be in one OUT only, and every OUT must have been compared with\n"
    "the same thresholds and --op-list.\n"
    "\n"
    "Output, in MERGED (default ./acc_merge): summary.json, report.csv,\n"
    "report.xlsx, report.html, as compare writes them.\n"
    "\n"
    "options:\n"
    "  -o, --output MERGED    report directory (created; files are overwritten)\n"
    "  --json                 print summary.json on stdout instead of the verdict\n"
    "  --progress             progress lines on stderr even when it is not a terminal\n"
    "  --only-failed          report only failing tensor pairs\n"
    "  --min-cosine X         report only tensor pairs with cosine < X\n"
    "  -h, --help             this text\n"
    "\n"
    "Exit codes: as compare's: 0 no divergence, 1 divergence found, 2 usage or\n"
    "input error (an OUT without a saved comparison, a rank in two OUTs).\n";

}  // namespace

int mergeCommand(const std::vector<std::string>& argv) {
  JudgeArgs args;
  args.out = "acc_merge";
  CommandLine cli("merge", kMergeUsage);
  CLI::App& app = cli.app();
  addReportOptions(app, args);
  addMinCosineOption(app, args);
  app.add_option("OUT", args.positional);
  if (std::optional<int> done = cli.parse(argv)) return *done;
  if (args.positional.empty()) {
    std::cerr << "acc-analyzer merge: compare report directories expected (OUT...), got none\n\n" << kMergeUsage;
    return kExitInput;
  }
  ProgressReporter progress(stderr, "merge", args.progress);
  CompareResult result;
  try {
    SavedJudgement judgement;
    result = mergeResults(args.positional, judgement);
    args.op_list = judgement.op_list;
    for (const auto& [flag, value] : judgement.threshold_flags) {
      const std::string error = applyThresholdFlag(args.thresholds, flag, value);
      if (!error.empty()) throw InputError("a saved threshold flag: " + error);
    }
  } catch (const InputError& e) {
    std::cerr << "acc-analyzer: " << e.what() << "\n";
    return kExitInput;
  }
  return reportComparison(args, result, {result.dir0, result.dir1}, progress, /*save=*/false);
}

}  // namespace acc::analyzer
