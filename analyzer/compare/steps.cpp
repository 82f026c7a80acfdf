#include "analyzer/compare/steps.h"

#include <cmath>

#include "analyzer/report/record_error.h"

namespace acc::analyzer {

std::vector<StepSummary> summarizeSteps(const CompareResult& result) {
  std::vector<StepSummary> steps;
  forEachRecord(result, [&](size_t position, const RecordComparison& r) {
    if (steps.empty() || steps.back().step != r.step || steps.back().rank != r.rank) {
      steps.push_back({});
      steps.back().step = r.step;
      steps.back().rank = r.rank;
      steps.back().first_position = position;
    }
    StepSummary& s = steps.back();
    ++s.records;
    s.last_position = position;
    if (r.verdict == Verdict::Warn) ++s.warn;
    if (r.origin) ++s.origins;
    if (r.verdict == Verdict::Fail) {
      if (s.fail++ == 0) s.first_failing = r.name;
    }
    const double e = recordError(r);
    if (std::isnan(e)) return;
    double& worst = r.pass == format::Pass::Forward ? s.worst_forward : s.worst_backward;
    if (std::isnan(worst) || e > worst) worst = e;
  });
  return steps;
}

}  // namespace acc::analyzer
