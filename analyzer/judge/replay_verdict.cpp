#include "analyzer/judge/replay_verdict.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "analyzer/judge/origins.h"
#include "analyzer/compare/tensor_pairs.h"

namespace acc::analyzer {
namespace {

using Key = std::tuple<uint8_t, uint32_t, uint32_t>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Key keyOf(const TensorPair& p) { return {static_cast<uint8_t>(p.role), p.position, p.item}; }

std::map<Key, double> errors(const std::vector<TensorPair>& pairs) {
  std::map<Key, double> out;
  for (const TensorPair& p : pairs) out[keyOf(p)] = carriedError(p);
  return out;
}

double at(const std::map<Key, double>& m, const Key& k) {
  auto it = m.find(k);
  return it == m.end() ? kNaN : it->second;
}

double maxKnown(double a, double b) { return std::isnan(a) ? b : std::isnan(b) ? a : std::max(a, b); }

std::string failure(const replay::Outcome& o) {
  return o.status == replay::Status::Failed ? "replay failed: " + o.reason : o.reason;
}

const format::OpRecord& best(const replay::Outcome& o) { return o.has_float64 ? o.float64 : o.same_dtype; }

// Per produced tensor: recorded vs float64 replay, and what a correct CPU
// kernel shows in the recorded dtypes (same-dtype replay vs float64).
struct SideErrors {
  std::vector<TensorPair> pairs;           // (float64 replay, recorded)
  std::map<Key, double> error, dtype_error, cpu;
  std::map<Key, double> reduced;           // float64 on rounded factors vs float64: what the allowed precision costs
};

// A device may truncate where the emulation rounds to nearest: twice the
// emulated error is what the allowed precision explains.
constexpr double kReducedFactor = 2;

// Why the replay cannot judge the record: a produced tensor it did not make.
std::string unmatched(const std::vector<TensorPair>& pairs) {
  for (const TensorPair& p : pairs) {
    if (!p.metrics.compared && p.metrics.mismatch.rfind("missing in DIR0", 0) == 0) {
      return std::string("the replay made no ") + format::roleName(p.role) + "[" + std::to_string(p.position) + "]";
    }
  }
  return "";
}

Precision precisionOf(const TensorPair& p) { return pairPrecision(p.dtype0, p.dtype1); }

// `full`: also the same-dtype and CPU-kernel errors (DIR0's side of a
// comparison needs only its error against float64).
SideErrors sideErrors(const format::OpRecord& recorded, const replay::Outcome& o, const Thresholds& judged,
                      bool full = true) {
  // Errors on each tensor's own scale: a gradient of 1e-7 is no zero.
  const Thresholds t = kernelThresholds(judged);
  SideErrors s;
  s.pairs = compareRecordsNow(best(o), recorded, t);
  s.error = errors(s.pairs);
  if (!full) return s;
  s.dtype_error = errors(compareRecordsNow(o.same_dtype, recorded, t));
  if (o.has_float64) s.cpu = errors(compareRecordsNow(o.float64, o.same_dtype, t));
  if (o.has_float64 && o.has_reduced) s.reduced = errors(compareRecordsNow(o.float64, o.reduced, t));
  return s;
}

// What the kernel may deviate by (docs/METRICS.md, "The kernel rule"):
// kernel_factor x what a correct kernel shows on these inputs (the CPU
// kernel in the same dtypes, DIR0's own), never less than kernel_floor units
// of roundoff of the pair's precision, and twice what the precision the
// settings allow costs. No fixed per-dtype threshold: a bf16 kernel 3 % off
// is ~8 units of roundoff, far beyond the half unit a correct one rounds to.
double toleranceOf(const TensorPair& p, const Thresholds& t, double cpu, double e0, double reduced) {
  double tol = std::max(t.kernelFloor(precisionOf(p)), t.kernel_factor * maxKnown(std::isnan(cpu) ? 0 : cpu, e0));
  if (!std::isnan(reduced)) tol = std::max(tol, kReducedFactor * reduced);
  return tol;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// A produced tensor the kernel rule finds wrong fails, whatever the fixed
// thresholds said of it.
void failByKernelRule(TensorPair& p, double e, double tolerance, double cpu, const Thresholds& t) {
  if (p.verdict == Verdict::Fail) return;
  const double u = t.of(precisionOf(p)).roundoff;
  p.verdict = Verdict::Fail;
  p.reason = "kernel error " + fmt(e) + (u > 0 ? " (" + fmt(e / u) + " units of roundoff)" : std::string()) + " > " +
             fmt(tolerance) + (std::isnan(cpu) ? std::string() : ", the CPU kernel's " + fmt(cpu));
}

// A screened record replay found wrong: its produced tensors beyond the
// kernel rule fail (DIR0 against DIR1, as compared), and it is an origin.
void markScreenedWrong(RecordComparison& record, const SideErrors& one, const std::map<Key, double>& zero,
                       const Thresholds& t) {
  for (TensorPair& p : record.tensors) {
    if (consumes(record, p)) continue;
    const Key k = keyOf(p);
    const double e1 = at(one.error, k), cpu = at(one.cpu, k);
    const double tolerance = toleranceOf(p, t, cpu, at(zero, k), at(one.reduced, k));
    if (e1 > tolerance) failByKernelRule(p, e1, tolerance, cpu, t);
    record.verdict = std::max(record.verdict, p.verdict);
  }
  record.origin = true;
}

void notePrecision(ReplayCheck& c, const ReplayItem& item, const replay::Outcome& o) {
  if (!item.precision.reduced() || !o.has_reduced) return;
  c.precision = item.precision.name;
  c.precision_setting = item.precision.setting;
}

// The kernel rule on each produced tensor in turn (replay alone decides:
// the fixed thresholds, p.verdict, know nothing of what these inputs
// allow); `c` keeps the figures of the tensor that decides: the first
// wrong one, else the closest.
struct KernelRule {
  ReplayCheck& c;
  const Thresholds& t;
  bool deviates = false;
  double worst_margin = -1;

  void judge(const TensorPair& p, const SideErrors& one, double e0, double reduced) {
    const Key k = keyOf(p);
    const double e1 = at(one.error, k), cpu = at(one.cpu, k);
    const double tolerance = toleranceOf(p, t, cpu, e0, reduced);
    const bool wrong = e1 > tolerance;
    const double margin = e1 / tolerance;
    if (!deviates && (wrong || margin > worst_margin)) {
      c.error1 = e1;
      c.error1_dtype = at(one.dtype_error, k);
      c.cpu_error = cpu;
      c.error0 = e0;
      c.tolerance = tolerance;
      c.precision_error = reduced;
      worst_margin = margin;
    }
    deviates = deviates || wrong;
  }
};

// A composite op's node that acc-replay cannot run alone: its outputs that
// sum an input over its leading dimensions (a bias gradient) are replayed
// here (sum_replay.h). Such a sum of many values that nearly cancel carries
// its inputs' error many times over (a bias gradient in bfloat16 autocast,
// 10x and more), and no kernel is at fault. Used where DIR0's output is
// that sum within its kernel floor (the shapes alone do not say it is). The
// record amplifies when these outputs are reproduced and no other output
// fails by the ratio rule; it is confirmed when one of them is not.
// Returns false where the sums decide nothing (the ratio rule stands).
bool judgeBySums(RecordComparison& record, const ReplayItem& item0, const ReplayItem& item1, const Thresholds& t) {
  if (item0.sums.empty() || item1.sums.empty()) return false;
  const SideErrors one = sideErrors(item1.sums.recorded, item1.sums.outcome, t);
  const std::map<Key, double> zero = sideErrors(item0.sums.recorded, item0.sums.outcome, t, false).error;
  std::map<Key, const TensorPair*> judged;  // the record's pairs, by key
  for (const TensorPair& p : record.tensors) judged[keyOf(p)] = &p;
  ReplayCheck& c = record.replay;
  KernelRule rule{c, t};
  std::set<Key> replayed;
  for (const TensorPair& p : one.pairs) {
    const Key k = keyOf(p);
    const double e0 = at(zero, k);
    auto it = judged.find(k);
    if (it == judged.end() || std::isnan(e0) || e0 > t.kernelFloor(pairPrecision(format::Dtype::Float64,
                                                                                 it->second->dtype0))) {
      continue;  // DIR0's output is no such sum
    }
    rule.judge(p, one, e0, kNaN);
    replayed.insert(k);
  }
  if (replayed.empty()) return false;
  const std::string what = "only its outputs that sum an input over its leading dimensions were replayed (" +
                           record.grad_fn + ", one of several autograd nodes of a composite op)";
  if (rule.deviates) {
    c.state = ReplayState::Confirmed;
    c.reason = what;
    return true;
  }
  // Outputs not replayed still name the op by the ratio rule.
  for (const TensorPair& p : record.tensors) {
    if (consumes(record, p) || replayed.count(keyOf(p))) continue;
    if (p.verdict == Verdict::Fail && carriedError(p) > t.origin_factor * record.input_error) return false;
  }
  c.state = ReplayState::Amplifies;
  c.reason = what;
  record.origin = false;
  return true;
}

}  // namespace

void judgeByReplay(RecordComparison& record, const ReplayItem& item0, const replay::Outcome& out0,
                   const ReplayItem& item1, const replay::Outcome& out1, const Thresholds& thresholds) {
  ReplayCheck& c = record.replay;
  if (!item1.not_replayable.empty() || out1.status != replay::Status::Replayed) {
    c.state = ReplayState::NotReplayable;
    c.reason = !item1.not_replayable.empty() ? item1.not_replayable : failure(out1);
    if (record.origin && record.pass == format::Pass::Backward && record.input_error > 0 &&
        masksItsGradient(record.op)) {
      // As at level 1: a flipped element of the mask explains any error.
      record.origin = false;
      c.state = ReplayState::MayAmplify;
      c.reason = "not replayable (" + c.reason + "), and its gradient is masked by where its forward input, "
                 "which already differs, crosses a threshold";
      return;
    }
    if (record.origin) judgeBySums(record, item0, item1, thresholds);
    return;  // otherwise the ratio rule stands
  }
  const SideErrors one = sideErrors(item1.recorded, out1, thresholds);
  if (std::string why = unmatched(one.pairs); !why.empty()) {
    c.state = ReplayState::NotReplayable;
    c.reason = why;
    return;
  }
  std::map<Key, double> zero;
  if (item0.not_replayable.empty() && out0.status == replay::Status::Replayed) {
    zero = sideErrors(item0.recorded, out0, thresholds, false).error;
  }
  notePrecision(c, item1, out1);
  KernelRule rule{c, thresholds};
  for (const TensorPair& p : one.pairs) rule.judge(p, one, at(zero, keyOf(p)), at(one.reduced, keyOf(p)));
  const bool deviates = rule.deviates;
  if (record.screened) {
    // Its inputs explain nothing of its outputs' difference: either its
    // kernel is wrong, or it reproduces its own output (both kernels right).
    c.state = deviates ? ReplayState::Confirmed : ReplayState::Reproduced;
    if (deviates) markScreenedWrong(record, one, zero, thresholds);
    return;
  }
  c.state = deviates ? ReplayState::Confirmed : ReplayState::Amplifies;
  if (!deviates) record.origin = false;
}

void checkByReplay(RecordComparison& record, const ReplayItem& item, const replay::Outcome& out,
                   const Thresholds& thresholds) {
  ReplayCheck& c = record.replay;
  record.verdict = Verdict::Pass;
  record.origin = false;
  if (!item.not_replayable.empty() || out.status != replay::Status::Replayed) {
    c.state = ReplayState::NotReplayable;
    c.reason = !item.not_replayable.empty() ? item.not_replayable : failure(out);
    return;
  }
  SideErrors s = sideErrors(item.recorded, out, thresholds);
  if (std::string why = unmatched(s.pairs); !why.empty()) {
    c.state = ReplayState::NotReplayable;
    c.reason = why;
    return;
  }
  notePrecision(c, item, out);
  bool deviates = false;
  for (TensorPair& p : s.pairs) {
    const Key k = keyOf(p);
    const double e = at(s.error, k), cpu = at(s.cpu, k), reduced = at(s.reduced, k);
    const double tolerance = toleranceOf(p, thresholds, cpu, std::numeric_limits<double>::quiet_NaN(), reduced);
    if (e > tolerance) failByKernelRule(p, e, tolerance, cpu, thresholds);
    if (p.verdict == Verdict::Fail && !(e > tolerance)) {
      // As far from float64 as a correct CPU kernel in this dtype is, or
      // as a kernel at the precision the settings allow.
      p.verdict = Verdict::Warn;
      p.reason = !std::isnan(reduced) && tolerance == kReducedFactor * reduced
                     ? "within what " + c.precision + " products give (allowed by " + c.precision_setting + ")"
                     : "within " + fmt(thresholds.kernel_factor) + "x what the CPU kernel in this dtype shows";
    }
    if (p.verdict == Verdict::Fail && !(e <= c.error1)) {  // the worst failing tensor (error1 starts NaN)
      c.error1 = e;
      c.error1_dtype = at(s.dtype_error, k);
      c.cpu_error = cpu;
      c.tolerance = tolerance;
      c.precision_error = reduced;
    }
    deviates = deviates || p.verdict == Verdict::Fail;
    record.verdict = std::max(record.verdict, p.verdict);
  }
  if (!deviates && !s.pairs.empty()) {
    c.error1 = 0;
    for (const TensorPair& p : s.pairs) {
      c.error1 = maxKnown(c.error1, at(s.error, keyOf(p)));
      c.precision_error = maxKnown(c.precision_error, at(s.reduced, keyOf(p)));
    }
  }
  record.tensors = std::move(s.pairs);
  record.origin = deviates;
  c.state = deviates ? ReplayState::Confirmed : ReplayState::Reproduced;
}

}  // namespace acc::analyzer
