// The columns of the per-tensor-pair reports (report.csv, report.xlsx, the
// HTML table): one shared list so every report has the same columns in the
// same order. One row per TensorPair, execution order.
#pragma once

#include <string>
#include <vector>

#include "analyzer/common/result.h"

namespace acc::analyzer {

enum class ColumnType {
  Text,     // names, dtypes, shapes, verdicts
  Integer,  // index, step, rank, position, item, mismatch counts
  Number,   // metrics (floating point)
};

struct Column {
  const char* name;
  ColumnType type;
};

// index,name,op,module,pass,step,rank,role,position,item,dtype0,dtype1,shape0,shape1,
// cosine,max_abs,max_rel,mean_abs,rmse,rel_l2,within_1e3,within_5e3,sign_agree,max_ulp,
// nan_mismatch,inf_mismatch,verdict,origin,replay,mismatch
const std::vector<Column>& reportColumns();

// The cells of one row, in reportColumns() order, as text:
// - Number cells: "%.9g", or "nan" / "inf" / "-inf"; an EMPTY cell means the
//   metric is not available (level 1 compares statistics only: cosine, the
//   within ratios and max_ulp are then empty; see docs/METRICS.md), and all
//   metric cells are empty when the pair was not compared (see `mismatch`).
// - Integer cells: decimal.
// - origin: "yes" on every tensor of an origin record, else "".
// - replay: what replaying the record said (confirmed, amplifies,
//   reproduced, "not replayable: why"), empty when it was not replayed.
// - verdict: "pass", "warn" or "fail".
std::vector<std::string> reportRow(const RecordComparison& record, const TensorPair& pair);

// Index of a column by name, -1 when unknown.
int columnIndex(const std::string& name);

}  // namespace acc::analyzer
