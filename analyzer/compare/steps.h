// Per training step (and rank): how its records fared and the worst error
// its forward and backward records carry, so that a long run shows the step
// where two runs part (report.html's overview, report.xlsx's steps sheet).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/common/result.h"

namespace acc::analyzer {

// In execution order (rank, then step as the rows come).
std::vector<StepSummary> summarizeSteps(const CompareResult& result);

}  // namespace acc::analyzer
