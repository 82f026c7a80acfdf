// acc-analyzer compare DIR0 DIR1 -o OUT: which op starts the drift.
#include <cstdint>
#include <malloc.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "analyzer/cli/command_line.h"
#include "analyzer/cli/commands.h"
#include "analyzer/common/text.h"
#include "analyzer/report/csv_report.h"
#include "analyzer/compare/engine.h"
#include "analyzer/cli/judge_args.h"
#include "analyzer/judge/origins.h"
#include "analyzer/compare/progress.h"
#include "analyzer/compare/gradients.h"
#include "analyzer/report/report_filter.h"
#include "analyzer/report/report_set.h"
#include "analyzer/report/summary.h"
#include "analyzer/read/recording.h"
#include "analyzer/report/report_html.h"
#include "analyzer/report/report_xlsx.h"
#include "format/random_ops.h"
#include "replay/pool.h"

namespace acc::analyzer {
namespace {

constexpr const char* kUsage =
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
    "report.xlsx, report.html (one row per tensor pair, execution order).\n"
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

std::string num(double v, const char* f = "%.3g") { return numberText(v, f); }

std::string where(const TensorPair& p) {
  return std::string(format::roleName(p.role)) + "[" + std::to_string(p.position) +
         (p.item ? "." + std::to_string(p.item) : "") + "]";
}

std::string recordTitle(const RecordComparison& r) {
  std::string s = r.name;
  if (!r.name1.empty()) s += " (DIR1: " + r.name1 + ")";
  s += "  step " + std::to_string(r.step) + ", rank " + std::to_string(r.rank);
  if (r.pass == format::Pass::Backward && !r.grad_fn.empty()) s += ", " + r.grad_fn;
  if (!r.module.empty()) s += ", in " + r.module;
  return s;
}

// The modules whose records fail, in the order their first failure ran
// (at most five): where a user looks first in a model.
std::string failingModulesLine(const CompareResult& r) {
  std::string s;
  size_t shown = 0, failing = 0;
  for (const ModuleSummary& m : r.modules) {
    if (m.fail == 0) break;  // failing modules come first
    ++failing;
    if (shown == 5) continue;
    s += (shown++ ? ", " : " ") + moduleLabel(m.module) + " (" +
         std::to_string(m.fail) + " failing, first " + m.first_failing + ")";
  }
  if (failing == 0) return "";
  if (failing > shown) s += " and " + std::to_string(failing - shown) + " more";
  return "  modules with failing records, first failure first:" + s + " (summary.json: modules)\n";
}

std::string pairLine(const TensorPair& p) {
  const TensorMetrics& m = p.metrics;
  std::string s = where(p) + " " + format::dtypeName(p.dtype1) + " " + shapeText(p.shape1) + ": ";
  if (!m.compared) return s + m.mismatch;
  if (!p.reason.empty()) s += p.reason + "; ";
  if (m.from_stats) {
    s += "statistics: rel_l2 >= " + num(m.rel_l2) + ", max_abs >= " + num(m.max_abs);
  } else {
    s += "cosine " + num(m.cosine, "%.7f") + ", max_abs " + num(m.max_abs) + ", max_rel " + num(m.max_rel);
  }
  return s;
}

// What replay said about a candidate origin, and for level-1 candidates how
// to confirm them; one or two lines, indented.
std::string replayLines(const RecordComparison& r) {
  const ReplayCheck& c = r.replay;
  std::string s;
  switch (c.state) {
    case ReplayState::NotTried:
      s = r.rerecord.empty() ? "not replayed (--no-replay)" : "not replayed: recorded with statistics only";
      break;
    case ReplayState::NotReplayable:
      s = "not confirmed by replay (" + c.reason + "): named by the ratio rule";
      break;
    case ReplayState::MayAmplify:
      s = "may amplify: it " + c.reason;
      break;
    case ReplayState::Confirmed:
      s = "confirmed by replay: DIR1's output is " + num(c.error1) + " off the float64 replay of its own inputs " +
          "(tolerance " + num(c.tolerance) + "; DIR0's: " + num(c.error0) + ")";
      break;
    case ReplayState::Amplifies:
    case ReplayState::Reproduced:
      s = "replay reproduces it: DIR1's output is " + num(c.error1) + " off the float64 replay of its own inputs " +
          "(tolerance " + num(c.tolerance) + "; DIR0's: " + num(c.error0) + "): " +
          (c.precision.empty() ? "the op amplifies its inputs' error" : "not a wrong kernel");
      break;
  }
  s = "    " + s + "\n";
  if (!c.precision.empty()) {
    s += "    judged at " + c.precision + " precision, which " + c.precision_setting + " allows DIR1: " + c.precision +
         " products alone are " + num(c.precision_error) + " off float64 here\n";
  }
  if (!r.rerecord.empty()) {
    s += "    confirm by replay: record both runs again with " + r.rerecord + " and compare them\n";
  }
  return s;
}

// The short verdict on the terminal, after the numeric settings that differ
// between the runs (the first thing to check when porting).
void printVerdict(const CompareResult& r, const CompareCounts& c, const std::vector<std::string>& reports) {
  const RecordComparison* first = firstDivergence(r);
  std::ostringstream o;
  if (!r.settings_differ.empty()) {
    o << "acc-analyzer compare: the runs' numeric settings differ (check these first):\n";
    for (const SettingDifference& d : r.settings_differ) {
      o << "  " << d.setting << ": DIR0 " << settingText(d.dir0) << ", DIR1 " << settingText(d.dir1) << "\n";
    }
  }
  if (!first) {
    o << "acc-analyzer compare: no divergence: " << c.matched << " records, "
      << (c.pairs_compared + c.pairs_not_compared) << " tensor pairs (" << c.pairs_compared
      << " with values compared): " << c.pairs_pass << " pass, " << c.pairs_warn << " warn\n";
  } else if (first->origin) {
    o << "acc-analyzer compare: DIVERGENCE, first origin:\n  " << recordTitle(*first) << "\n";
    if (format::randomKindOf(first->op) != format::RandomKind::None) {
      o << "    draws random numbers: each device's generator draws its own, so the runs part here\n"
           "    whatever their kernels; record DIR0 with ACC_RANDOM=save and DIR1 with ACC_RANDOM=DIR0\n"
           "    to give DIR1 the draws of DIR0 (docs/guide/recording.md, Random ops)\n";
    }
    for (const TensorPair& p : first->tensors) {
      if (p.verdict == Verdict::Fail && !consumes(*first, p)) o << "    " << pairLine(p) << "\n";
    }
    o << "    adds the error: outputs carry " << num(first->output_error) << ", inputs "
      << num(first->input_error) << "\n";
    o << replayLines(*first);
    if (!first->location.empty()) o << "    at " << first->location << "\n";
    if (r.origins.size() > 1) {
      o << "  later origins:";
      size_t shown = 0;
      for (size_t k = 1; k < r.origins.size() && shown < 5; ++k, ++shown) {
        const RecordComparison& x = recordAt(r, r.origins[k]);
        o << (shown ? ", " : " ") << x.name << " (step " << x.step << ")";
      }
      if (r.origins.size() > 6) o << " and " << (r.origins.size() - 6) << " more";
      o << "\n";
    }
  } else if (endingOf(r) == Ending::Drift) {
    const bool amplifies = first->replay.state == ReplayState::Amplifies || first->replay.state == ReplayState::MayAmplify;
    o << "acc-analyzer compare: no origin: the runs drift apart by rounding "
      << (amplifies ? "that an op amplifies" : "that grew through the recorded ops") << "; first failing record:\n  "
      << recordTitle(*first) << "\n";
    o << "    outputs carry " << num(first->output_error) << ", inputs " << num(first->input_error)
      << (amplifies ? "" : ", all from earlier records' outputs") << "\n";
    if (first->replay.state != ReplayState::NotTried) o << replayLines(*first);
    if (!first->location.empty()) o << "    at " << first->location << "\n";
  } else {
    o << "acc-analyzer compare: DIVERGENCE, no origin among the recorded ops; first failing record:\n  "
      << recordTitle(*first) << "\n";
    for (const TensorPair& p : first->tensors) {
      if (p.verdict == Verdict::Fail) o << "    " << pairLine(p) << "\n";
    }
    std::vector<const UnmatchedRecord*> before = unmatchedBefore(r, *first);
    if (first->from_other_ranks) {
      o << "    a collective: its inputs on rank " << first->rank << " agree, its result does not: another rank's\n"
           "    contribution differs; compare the other ranks' recordings (give compare the directories\n"
           "    holding every rank{R}/) to find the op that made it\n";
    } else if (const Feeder f = feederOf(r, *first); f.record && isDtypeCast(*f.record)) {
      o << "    its " << where(*f.input) << " is what " << f.record->name << " made, a dtype cast only "
        << (f.record->side == 0 ? "DIR0" : "DIR1") << " has (autocast's):\n"
        << "    the error came through it from the recorded ops before it\n";
    } else if (f.record) {
      o << "    its " << where(*f.input) << " is what " << f.record->name << " made, a record only "
        << (f.record->side == 0 ? "DIR0" : "DIR1") << " has:\n"
        << "    the drift starts at " << f.record->name << " (an op the other run does not run)\n";
    } else if (before.empty()) {
      o << "    its inputs already differ: the difference enters before it (different input data,\n"
           "    or ops that were not recorded)\n";
    } else {
      o << "    its inputs already differ; records without a partner ran before it:\n";
      for (const UnmatchedRecord* u : before) {
        o << "      " << u->name << " (only in " << (u->side == 0 ? "DIR0" : "DIR1") << ")\n";
      }
    }
    if (!first->location.empty()) o << "    at " << first->location << "\n";
  }
  size_t amplifiers = 0;
  forEachRecord(r, [&](size_t, const RecordComparison& rc) {
    amplifiers += rc.replay.state == ReplayState::Amplifies || rc.replay.state == ReplayState::MayAmplify;
  });
  if (amplifiers) o << "  " << amplifiers << " candidate(s) amplify their inputs' error, not origins (summary.json: amplifiers)\n";
  o << failingModulesLine(r);
  if (const GradientPart part = firstFailingGradient(r.gradients); part.cell) {
    o << "  gradients part first at step " << part.cell->step << ": " << part.row->parameter << " (error "
      << num(part.cell->error);
    if (!std::isnan(part.cell->sign_agree)) o << ", signs agree on " << num(100 * part.cell->sign_agree) << "%";
    o << "; summary.json: gradients)\n";
  }
  o << "  " << c.matched << " records compared: " << c.records_pass << " pass, " << c.records_warn << " warn, "
    << c.records_fail << " fail; unmatched: " << c.unmatched0 << " only in DIR0, " << c.unmatched1
    << " only in DIR1\n";
  if (!reports.empty()) {
    o << "  reports:";
    for (const std::string& path : reports) o << " " << path;
    o << "\n";
  }
  std::cout << o.str();
}

// `vcs -c X`-style listing of the pairs below --min-cosine.
void printLowCosine(const CompareResult& filtered, double min_cosine) {
  size_t total = 0;
  std::string listed;
  forEachRecord(filtered, [&](size_t, const RecordComparison& r) {
    for (const TensorPair& p : r.tensors) {
      if (total++ >= 20) continue;
      char line[512];
      std::snprintf(line, sizeof line, "  %6llu  %-36s %-12s cosine %s  max_abs %s\n",
                    static_cast<unsigned long long>(r.index0), r.name.c_str(), where(p).c_str(),
                    num(p.metrics.cosine, "%.6f").c_str(), num(p.metrics.max_abs).c_str());
      listed += line;
    }
  });
  std::printf("%zu tensor pair(s) with cosine < %.10g:\n%s", total, min_cosine, listed.c_str());
  if (total > 20) std::printf("  ... (all in report.csv)\n");
}

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
  addChecked(app, "--min-cosine", [&a](const std::string& v) -> std::string {
    double x = 0;
    if (!parseNumber(v, x) || x < -1 || x > 1) return "--min-cosine: '" + v + "' is not a number in [-1, 1]";
    a.common.filter.min_cosine = x;
    return "";
  });
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
  CommandLine cli("compare", kUsage);
  declare(cli.app(), a);
  if (std::optional<int> done = cli.parse(argv)) return *done;
  const std::vector<std::string>& dirs = a.common.positional;
  if (dirs.size() != 2) {
    std::cerr << "acc-analyzer compare: two recording directories expected (DIR0 DIR1), got " << dirs.size() << "\n\n"
              << kUsage;
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
  // Said before anything else: what was lost bounds what compare can see.
  for (const std::string& n : result.recording_notes) std::cerr << "acc-analyzer: " << n << "\n";
  // A side none of whose records could be read compared nothing: no verdict.
  for (int side = 0; side < 2; ++side) {
    const uint64_t mine = side == 0 ? result.records0 : result.records1;
    const uint64_t other = side == 0 ? result.records1 : result.records0;
    if (mine != 0 || (other == 0 && result.problems.empty())) continue;
    progress.finish();
    for (const std::string& p : result.problems) std::cerr << "acc-analyzer: " << p << "\n";
    std::cerr << "acc-analyzer: " << (side == 0 ? a.options.dir0 : a.options.dir1) << " (DIR" << side
              << "): no record could be read, so nothing was compared\n";
    return kExitInput;
  }
  const CompareCounts counts = countResult(result);
  const Ending ending = endingOf(result);
  int exit_code = !result.problems.empty() ? kExitInput : ending == Ending::Divergence ? kExitFound : kExitOk;

  WrittenReports reports;
  CompareProgress writing;
  writing.writing = true;
  const auto writing_start = std::chrono::steady_clock::now();
  auto tick = [&](size_t done, size_t total) {
    writing.pairs_done = done;
    writing.pairs_total = total;
    writing.seconds = result.seconds +
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - writing_start).count();
    progress.update(writing);
  };
  const std::string err = writeReports(a.common, result, exit_code, {}, reports, tick);
  progress.finish();
  for (const std::string& p : result.problems) std::cerr << "acc-analyzer: " << p << "\n";
  if (!err.empty()) {
    std::cerr << "acc-analyzer: " << err << "\n";
    return kExitInput;
  }
  if (a.common.json) {
    std::cout << reports.summary.dump(2) << "\n";
  } else {
    if (a.common.filter.min_cosine) printLowCosine(reports.shown, *a.common.filter.min_cosine);
    printVerdict(result, counts, reports.paths);
  }
  std::cout.flush();
  return exit_code;
}

}  // namespace acc::analyzer
