#include "analyzer/replay_verdict.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "analyzer/compare/origins.h"
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

double failLimit(const TensorPair& p, const Thresholds& t) {
  return t.of(pairPrecision(p.dtype0, p.dtype1)).rel_l2_fail;
}

// `full`: also the same-dtype and CPU-kernel errors (DIR0's side of a
// comparison needs only its error against float64).
SideErrors sideErrors(const ReplayItem& item, const replay::Outcome& o, const Thresholds& t, bool full = true) {
  SideErrors s;
  s.pairs = compareRecordsNow(best(o), item.recorded, t);
  s.error = errors(s.pairs);
  if (!full) return s;
  s.dtype_error = errors(compareRecordsNow(o.same_dtype, item.recorded, t));
  if (o.has_float64) s.cpu = errors(compareRecordsNow(o.float64, o.same_dtype, t));
  if (o.has_float64 && o.has_reduced) s.reduced = errors(compareRecordsNow(o.float64, o.reduced, t));
  return s;
}

// What the kernel may deviate by: the fail threshold, origin_factor x what
// a correct CPU kernel (or DIR0's own) shows, and twice what the precision
// the settings allow costs.
double toleranceOf(const TensorPair& p, const Thresholds& t, double cpu, double e0, double reduced) {
  double tol = std::max(failLimit(p, t), t.origin_factor * maxKnown(std::isnan(cpu) ? 0 : cpu, e0));
  if (!std::isnan(reduced)) tol = std::max(tol, kReducedFactor * reduced);
  return tol;
}

void notePrecision(ReplayCheck& c, const ReplayItem& item, const replay::Outcome& o) {
  if (!item.precision.reduced() || !o.has_reduced) return;
  c.precision = item.precision.name;
  c.precision_setting = item.precision.setting;
}

}  // namespace

void judgeByReplay(RecordComparison& record, const ReplayItem& item0, const replay::Outcome& out0,
                   const ReplayItem& item1, const replay::Outcome& out1, const Thresholds& thresholds) {
  ReplayCheck& c = record.replay;
  if (!item1.not_replayable.empty() || out1.status != replay::Status::Replayed) {
    c.state = ReplayState::NotReplayable;
    c.reason = !item1.not_replayable.empty() ? item1.not_replayable : failure(out1);
    return;  // the ratio rule stands
  }
  const SideErrors one = sideErrors(item1, out1, thresholds);
  if (std::string why = unmatched(one.pairs); !why.empty()) {
    c.state = ReplayState::NotReplayable;
    c.reason = why;
    return;
  }
  std::map<Key, double> zero;
  if (item0.not_replayable.empty() && out0.status == replay::Status::Replayed) {
    zero = sideErrors(item0, out0, thresholds, false).error;
  }
  notePrecision(c, item1, out1);
  bool deviates = false;
  double worst_margin = -1;
  for (const TensorPair& p : one.pairs) {
    const Key k = keyOf(p);
    const double e1 = at(one.error, k), cpu = at(one.cpu, k), e0 = at(zero, k), reduced = at(one.reduced, k);
    const double tolerance = toleranceOf(p, thresholds, cpu, e0, reduced);
    const bool wrong = p.verdict == Verdict::Fail && e1 > tolerance;
    // Report the tensor that decides: the first wrong one, else the closest.
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
  SideErrors s = sideErrors(item, out, thresholds);
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
    if (p.verdict == Verdict::Fail && !(e > tolerance)) {
      // As far from float64 as a correct CPU kernel in this dtype is, or
      // as a kernel at the precision the settings allow.
      p.verdict = Verdict::Warn;
      p.reason = !std::isnan(reduced) && tolerance == kReducedFactor * reduced
                     ? "within what " + c.precision + " products give (allowed by " + c.precision_setting + ")"
                     : "within " + std::to_string(thresholds.origin_factor).substr(0, 4) +
                           "x what the CPU kernel in this dtype shows";
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
