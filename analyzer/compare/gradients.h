// The parameter-by-step map of gradient error (ACC_GRADS records), and where
// two runs' gradients part first.
#pragma once

#include <vector>

#include "analyzer/common/result.h"

namespace acc::analyzer {

// One row per (rank, parameter) in the order first recorded, cells by step.
std::vector<GradientRow> gradientMap(const CompareResult& result);

// The first failing cell in step order (then map order): nullptr when none.
struct GradientPart {
  const GradientRow* row = nullptr;
  const GradientCell* cell = nullptr;
};
GradientPart firstFailingGradient(const std::vector<GradientRow>& rows);

}  // namespace acc::analyzer
