#include "analyzer/report/record_error.h"

#include <cmath>
#include <limits>

namespace acc::analyzer {
namespace {

bool produced(const RecordComparison& r, const TensorPair& p) {
  return p.role == (r.pass == format::Pass::Forward ? format::Role::Output : format::Role::GradOut);
}

// Orders by verdict, then error (NaN lowest).
bool worse(const TensorPair& a, const TensorPair& b) {
  if (a.verdict != b.verdict) return a.verdict > b.verdict;
  double ea = pairError(a.metrics), eb = pairError(b.metrics);
  if (std::isnan(eb)) return !std::isnan(ea);
  return ea > eb;
}

}  // namespace

double pairError(const TensorMetrics& m) {
  if (!m.compared) return std::numeric_limits<double>::quiet_NaN();
  if (m.nan_mismatch || m.inf_mismatch) return std::numeric_limits<double>::infinity();
  if (!std::isnan(m.rel_l2)) return m.rel_l2;
  if (!std::isnan(m.max_rel)) return m.max_rel;
  return 1 - m.cosine;  // NaN when unknown
}

const TensorPair* worstPair(const RecordComparison& r) {
  const TensorPair* best = nullptr;
  for (bool produced_only : {true, false}) {
    for (const TensorPair& p : r.tensors) {
      // Uninitialized memory is not judged, so it does not show a divergence.
      if (!p.metrics.compared || p.uninitialized || (produced_only && !produced(r, p))) continue;
      if (best == nullptr || worse(p, *best)) best = &p;
    }
    if (best != nullptr) return best;
  }
  return nullptr;
}

double recordError(const RecordComparison& r) {
  const TensorPair* p = worstPair(r);
  return p ? pairError(p->metrics) : std::numeric_limits<double>::quiet_NaN();
}

const RecordComparison* focusRecord(const CompareResult& result) {
  if (const RecordComparison* origin = result.firstOrigin()) return origin;
  if (result.spill) return result.first_failing == SIZE_MAX ? nullptr : &recordAt(result, result.first_failing);
  for (const RecordComparison& r : result.records) {
    if (r.verdict == Verdict::Fail) return &r;
  }
  return nullptr;
}

}  // namespace acc::analyzer
