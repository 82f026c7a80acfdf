// compare at level 1 and 2: a matmul- or conv-like op whose run's settings
// let it compute float32 products in TF32 or bfloat16 (on a device) is
// judged at that precision, not at float32's: a TF32 matmul's rounding is
// not a wrong kernel (docs/METRICS.md, "Precision settings").
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "analyzer/compare/align.h"
#include "analyzer/common/result.h"
#include "analyzer/judge/thresholds.h"

namespace acc::analyzer {

// Re-judges the produced tensors (outputs, grad_out) of `r`, the pair of
// records (m0, m1), that fail or warn at their dtype's precision but may use
// a reduced one on either side.
void judgeAtAllowedPrecision(RecordComparison& r, const RecordMeta& m0, const nlohmann::json& manifest0,
                             const RecordMeta& m1, const nlohmann::json& manifest1, const Thresholds& thresholds);

}  // namespace acc::analyzer
