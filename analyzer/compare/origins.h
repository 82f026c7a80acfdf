// After the metrics: what each record's verdict is, which records hold
// uninitialized memory, and which records are origins of a divergence
// (docs/METRICS.md, "Origins").
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "analyzer/compare/result.h"
#include "analyzer/compare/thresholds.h"

namespace acc::analyzer {

// The error a tensor pair carries, for origin detection: rel_l2 (level 2),
// stat_error (level 1), +inf for NaN/Inf mismatches and failing shape or
// dtype mismatches, 0 for pairs not judged (uninitialized, no values).
double carriedError(const TensorPair& p);

// True for the roles a record consumes (fwd: inputs; bwd: grad_in) and
// produces (fwd: outputs; bwd: grad_out).
bool consumes(const RecordComparison& r, const TensorPair& p);

// True when a tensor the record produces fails on level-1 statistics: replay
// cannot judge it (the data were not recorded).
bool failsOnStatistics(const RecordComparison& r);

// One rank's records in execution order: marks uninitialized memory, sets
// each record's verdict, input_error, output_error and origin.
void judgeRecords(std::vector<RecordComparison>& records, const Thresholds& thresholds);

// The frame to show as the record's location: the innermost Python frame
// outside torch and the standard library, else the innermost frame.
std::string userLocation(const std::vector<std::string>& stack);

}  // namespace acc::analyzer
