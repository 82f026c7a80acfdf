// acc-analyzer compare DIR0 DIR1 -o OUT: which op starts the drift.
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <optional>

#include "analyzer/cli/command_line.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/compare_verdict.h"
#include "analyzer/cli/judge_args.h"
#include "analyzer/common/text.h"
#include "analyzer/compare/engine.h"
#include "analyzer/compare/progress.h"
#include "analyzer/read/recording.h"
#include "replay/pool.h"

namespace acc::analyzer {
namespace {

constexpr const char* kCompareUsage =
    "usage: acc-analyzer compare DIR0 DIR1 [-o OUT] [options]\n"
    "\n"
    "Compares two recordings op by op and names the op where they start to\n"
    "differ. DIR0 is the reference (e.g. CPU or CUDA), DIR1 the device under\n"
    "test; each is a recording directory (rank*/ folders) or one rank folder,\n"
    "or an msprobe dump (task statistics or tensor: its step*/ folders, a step's\n"
    "rank/proc folders, or one dump.json), read as a recording (docs/guide/msprobe.md).\n"
    "Records are matched by name within step and rank; where the op sequences\n"
    "differ (extra, missing or fused ops) the rest is aligned on (op, pass,\n"
    "shapes). Level-2 recordings are compared element by element, level-1 ones\n"
    "on their statistics. A record is a candidate ORIGIN when its outputs fail\n"
    "while its inputs carry at most 1/FACTOR of that error. At level 2 each\n"
    "candidate is then run again on the CPU on its own recorded inputs\n"
    "(acc-replay): it stays an origin only when DIR1's kernel does not\n"
    "reproduce its own output; otherwise it amplifies its inputs' error.\n"
    "docs/METRICS.md defines every metric, threshold and rule.\n"
    "\n"
    "Output, in OUT (default ./acc_compare): summary.json, report.csv,\n"
    "report.xlsx, report.html (one row per tensor pair, execution order), and\n"
    "the judged rows (rows/, result.json) that merge joins with other ranks'.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT       report directory (created; files are overwritten)\n"
    "  --json                 print summary.json on stdout instead of the verdict\n"
    "  --progress             progress lines on stderr even when it is not a\n"
    "                         terminal (a log); a terminal always gets the bar\n"
    "  --op-list A,B          compare only ops whose name contains one of these\n"
    "                         (case-insensitive: relu matches aten::relu_ and\n"
    "                         ReluBackward0)\n"
    "  --ranks LIST           compare only these ranks, e.g. 0,2,8-15: the ranks\n"
    "                         of a large job compared in separate processes\n"
    "  --min-cosine X         report only tensor pairs with cosine < X and list\n"
    "                         them on the terminal (like precision_tool's vcs -c X)\n"
    "  --only-failed          report only failing tensor pairs\n"
    "\n"
    "thresholds (V: one number for every precision, or a list such as\n"
    "fp32=1e-4,bf16=0.05; precisions int, bf16, fp16, fp32, fp64; a pair is\n"
    "judged at the less precise of its two dtypes):\n"
    "  --fail-rel-l2 V        fail when rel_l2 > V   (default int 0, bf16 0.04,\n"
    "                         fp16 0.01, fp32 1e-4, fp64 1e-8)\n"
    "  --warn-rel-l2 V        warn when rel_l2 > V   (bf16 0.01, fp16 2e-3,\n"
    "                         fp32 1e-5, fp64 1e-10)\n"
    "  --fail-cosine V        fail when cosine < V   (bf16 0.99, fp16 0.999,\n"
    "                         fp32 0.9999, fp64 0.999999)\n"
    "  --warn-cosine V        warn when cosine < V   (bf16 0.999, fp16 0.9999,\n"
    "                         fp32 0.99999, fp64 0.99999999)\n"
    "  --warn-within V        warn when the share of elements with a relative\n"
    "                         error within the bound is < V (fp32 0.999 and\n"
    "                         fp64 0.9999 within 1/1000; fp16 0.99 and bf16\n"
    "                         0.95 within 5/1000)\n"
    "  --fail-max-abs V       fail when max_abs > V  (off by default)\n"
    "  --fail-max-rel V       fail when max_rel > V  (off by default)\n"
    "  --fail-ulp V           fail when max_ulp > V  (off by default)\n"
    "  --small V              zero guard of relative errors (bf16 2^-8, fp16\n"
    "                         2^-11, fp32 2^-14, fp64 2^-30, int 1)\n"
    "  --origin-factor F      origin when output error > F x input error (10)\n"
    "  --kernel-factor K      replay: a kernel is wrong when its error against\n"
    "                         float64 > K x a correct kernel's on the same\n"
    "                         inputs (4) and > the kernel floor\n"
    "  --kernel-floor V       ... and > V units of roundoff (2^-p: bf16 2^-8, fp16\n"
    "                         2^-11, fp32 2^-24) of its precision (bf16 5,\n"
    "                         fp16 5, fp32 32, fp64 32)\n"
    "  --identical-inputs-floor V  level 1: inputs bit-identical, outputs'\n"
    "                         statistics more than V units of roundoff apart:\n"
    "                         the kernels differ (bf16 6, fp16 6, fp32 32, fp64 32)\n"
    "  --no-replay            do not replay candidate origins (level 2)\n"
    "  --replay-limit N       replay at most N candidates per rank (1000)\n"
    "\n"
    "  --threads N            metric threads (default: one per core)\n"
    "  --memory-mb N          tensor data held at once (default 512)\n"
    "  -h, --help             this text\n"
    "\n"
    "Exit codes: 0 no divergence (every record passes or warns, or the first\n"
    "failing record only amplifies rounding and no origin is found); 1\n"
    "divergence found (an origin, or failing records nothing explains); 2 usage\n"
    "or input error: missing directory, damaged\n"
    "records file (reported in one line; the readable records are compared and\n"
    "the reports written).\n";

// "0,2,8-15" into its ranks, in order; false when it is not such a list.
bool parseRankList(const std::string& text, std::vector<int64_t>& out) {
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const size_t dash = item.find('-');
    double first = 0, last = 0;
    if (!parseNumber(item.substr(0, dash), first) || first < 0 || first != std::floor(first)) return false;
    last = first;
    if (dash != std::string::npos && (!parseNumber(item.substr(dash + 1), last) || last < first || last != std::floor(last))) {
      return false;
    }
    if (last - first > 1e6) return false;
    for (auto r = static_cast<int64_t>(first); r <= static_cast<int64_t>(last); ++r) out.push_back(r);
    start = comma + 1;
  }
  return !out.empty();
}

struct Args {
  CompareOptions options;
  JudgeArgs common;
};

// Declares compare's command line, filling `a`.
void declare(CLI::App& app, Args& a) {
  a.common.out = "acc_compare";
  addJudgeOptions(app, a.common);
  app.add_flag_callback("--no-replay", [&a] { a.options.replay = false; });
  addMinCosineOption(app, a.common);
  addChecked(app, "--memory-mb", [&a](const std::string& v) -> std::string {
    double x = 0;
    if (!parseNumber(v, x) || x < 1 || x != std::floor(x)) return "--memory-mb: '" + v + "' is not a whole number >= 1";
    a.options.memory_budget = static_cast<uint64_t>(x) << 20;
    return "";
  });
  addChecked(app, "--ranks", [&a](const std::string& v) -> std::string {
    a.options.ranks.clear();
    if (!parseRankList(v, a.options.ranks)) {
      return "--ranks: '" + v + "' is not a list of ranks and ranges, e.g. 0,2,8-15";
    }
    return "";
  });
  addChecked(app, "--replay-limit", [&a](const std::string& v) -> std::string {
    double x = 0;
    if (!parseNumber(v, x) || x < 0 || x != std::floor(x)) return "--replay-limit: '" + v + "' is not a whole number >= 0";
    a.options.replay_limit = static_cast<size_t>(x);
    return "";
  });
}

}  // namespace

int compareCommand(const std::vector<std::string>& argv) {
  Args a;
  CommandLine cli("compare", kCompareUsage);
  declare(cli.app(), a);
  if (std::optional<int> done = cli.parse(argv)) return *done;
  const std::vector<std::string>& dirs = a.common.positional;
  if (dirs.size() != 2) {
    std::cerr << "acc-analyzer compare: two recording directories expected (DIR0 DIR1), got " << dirs.size() << "\n\n"
              << kCompareUsage;
    return kExitInput;
  }
  a.options.dir0 = dirs[0];
  a.options.dir1 = dirs[1];
  a.options.thresholds = a.common.thresholds;
  a.options.op_list = a.common.op_list;
  a.options.threads = a.common.threads;
  // Tensor buffers come and go on several threads. Fixing the mmap threshold
  // (glibc raises it by itself after each large free) returns buffers of 32
  // MiB and more to the system when freed, so they cannot pile up in
  // per-thread heaps beyond the memory budget; smaller ones are reused from
  // the heap without page faults.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ProgressReporter progress(stderr, "compare", a.common.progress);
  a.options.progress = [&](const CompareProgress& p) { progress.update(p); };
  a.options.replay_binary = replay::defaultWorkerPath();
  // The judged rows are spilled beside the reports while compare runs.
  std::error_code ec;
  std::filesystem::create_directories(a.common.out, ec);
  a.options.spill_dir = std::filesystem::is_directory(a.common.out) ? a.common.out : "";
  CompareResult result;
  try {
    result = compareRecordings(a.options);
  } catch (const InputError& e) {
    progress.finish();
    std::cerr << "acc-analyzer: " << e.what() << "\n";
    return kExitInput;
  }
  return reportComparison(a.common, result, {a.options.dir0, a.options.dir1}, progress, /*save=*/true);
}

}  // namespace acc::analyzer
