#include "analyzer/cli/compare_verdict.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "analyzer/cli/commands.h"
#include "analyzer/common/text.h"
#include "analyzer/compare/gradients.h"
#include "analyzer/compare/saved_result.h"
#include "analyzer/judge/origins.h"
#include "analyzer/report/report_set.h"
#include "analyzer/report/summary.h"
#include "format/random_ops.h"

namespace acc::analyzer {
namespace {

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
  // DIR0's own error, where its record held the values replay needs (not
  // in a level-1 reference whose run under test captured its finds).
  const std::string dir0 = std::isnan(c.error0) ? "" : "; DIR0's: " + num(c.error0);
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
          "(tolerance " + num(c.tolerance) + dir0 + ")";
      break;
    case ReplayState::Amplifies:
    case ReplayState::Reproduced:
      s = "replay reproduces it: DIR1's output is " + num(c.error1) + " off the float64 replay of its own inputs " +
          "(tolerance " + num(c.tolerance) + dir0 + "): " +
          (c.precision.empty() ? "the op amplifies its inputs' error" : "not a wrong kernel");
      break;
  }
  // Replayed in part (judge/sum_replay.h): which part.
  if ((c.state == ReplayState::Confirmed || c.state == ReplayState::Amplifies) && !c.reason.empty()) {
    s += "; " + c.reason;
  }
  s = "    " + s + "\n";
  if (!c.precision.empty()) {
    s += "    judged at " + c.precision + " precision, which " + c.precision_setting + " allows DIR1: " + c.precision +
         " products alone are " + num(c.precision_error) + " off float64 here\n";
  }
  if (!r.rerecord.empty() && (c.state == ReplayState::NotTried || c.state == ReplayState::MayAmplify)) {
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

}  // namespace

int reportComparison(const JudgeArgs& args, CompareResult& result, const std::array<std::string, 2>& dirs,
                     ProgressReporter& progress, bool save) {
  // Said before anything else: what was lost bounds what compare can see.
  for (const std::string& n : result.recording_notes) std::cerr << "acc-analyzer: " << n << "\n";
  // A side none of whose records could be read compared nothing: no verdict.
  for (int side = 0; side < 2; ++side) {
    const uint64_t mine = side == 0 ? result.records0 : result.records1;
    const uint64_t other = side == 0 ? result.records1 : result.records0;
    if (mine != 0 || (other == 0 && result.problems.empty())) continue;
    progress.finish();
    for (const std::string& p : result.problems) std::cerr << "acc-analyzer: " << p << "\n";
    std::cerr << "acc-analyzer: " << dirs[side] << " (DIR" << side
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
  const std::string err = writeReports(args, result, exit_code, {}, reports, tick);
  progress.finish();
  for (const std::string& p : result.problems) std::cerr << "acc-analyzer: " << p << "\n";
  if (!err.empty()) {
    std::cerr << "acc-analyzer: " << err << "\n";
    return kExitInput;
  }
  if (save && result.spill) {
    const std::string why = saveResult(result, {args.threshold_flags, args.op_list}, args.out);
    if (!why.empty()) std::cerr << "acc-analyzer: " << why << "; merge cannot read " << args.out << "\n";
  }
  if (args.json) {
    std::cout << reports.summary.dump(2) << "\n";
  } else {
    if (args.filter.min_cosine) printLowCosine(reports.shown, *args.filter.min_cosine);
    printVerdict(result, counts, reports.paths);
  }
  std::cout.flush();
  return exit_code;
}

}  // namespace acc::analyzer
