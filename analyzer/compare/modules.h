// The per-module summary of a comparison (ModuleSummary in result.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/common/result.h"

namespace acc::analyzer {

// One entry per module path the records carry, those with failing records
// first, in the order their first failure ran; then the others, in the
// order they first ran. Empty when no record carries a module path.
std::vector<ModuleSummary> summarizeModules(const CompareResult& result);

}  // namespace acc::analyzer
