// One number per tensor pair and per record for the reports' plot and
// summaries: how far DIR1 is from DIR0.
#pragma once

#include "analyzer/common/result.h"

namespace acc::analyzer {

// The pair's relative error: rel_l2 when known, else max_rel, else
// 1 - cosine; +inf when NaN or Inf positions differ; NaN when not compared
// or nothing is known.
double pairError(const TensorMetrics& m);

// The pair that shows the record's divergence: highest verdict, then largest
// pairError, among the tensors the record produces (outputs; grad_out for
// backward records) when any of them was compared, else among all;
// uninitialized memory is never chosen. nullptr when no pair qualifies.
const TensorPair* worstPair(const RecordComparison& r);

// pairError of worstPair, NaN when none.
double recordError(const RecordComparison& r);

// The record the reports lead with: the first origin, else the first
// failing record, else nullptr.
const RecordComparison* focusRecord(const CompareResult& result);

}  // namespace acc::analyzer
