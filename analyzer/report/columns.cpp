#include "analyzer/report/columns.h"
#include "analyzer/common/text.h"

#include <cmath>
#include <cstdio>

namespace acc::analyzer {
namespace {

// Level 1 leaves some metrics unknown: they are NaN in TensorMetrics and
// empty cells in the reports.
std::string metricText(const TensorMetrics& m, double v) {
  if (!m.compared) return "";
  if (std::isnan(v) && m.from_stats) return "";
  return numberText(v, "%.9g");
}

std::string replayText(const ReplayCheck& c) {
  std::string s = replayStateName(c.state);
  if (c.state == ReplayState::NotReplayable && !c.reason.empty()) s += ": " + c.reason;
  if (!c.precision.empty()) s += " (at " + c.precision + ", allowed by " + c.precision_setting + ")";
  return s;
}

}  // namespace

const std::vector<Column>& reportColumns() {
  static const std::vector<Column> columns = {
      {"index", ColumnType::Integer},      {"name", ColumnType::Text},
      {"op", ColumnType::Text},            {"module", ColumnType::Text},
      {"pass", ColumnType::Text},
      {"step", ColumnType::Integer},       {"rank", ColumnType::Integer},
      {"role", ColumnType::Text},          {"position", ColumnType::Integer},
      {"item", ColumnType::Integer},       {"dtype0", ColumnType::Text},
      {"dtype1", ColumnType::Text},        {"shape0", ColumnType::Text},
      {"shape1", ColumnType::Text},        {"cosine", ColumnType::Number},
      {"max_abs", ColumnType::Number},     {"max_rel", ColumnType::Number},
      {"mean_abs", ColumnType::Number},    {"rmse", ColumnType::Number},
      {"rel_l2", ColumnType::Number},      {"within_1e3", ColumnType::Number},
      {"within_5e3", ColumnType::Number},  {"sign_agree", ColumnType::Number},
      {"max_ulp", ColumnType::Number},
      {"nan_mismatch", ColumnType::Integer}, {"inf_mismatch", ColumnType::Integer},
      {"verdict", ColumnType::Text},       {"origin", ColumnType::Text},
      {"replay", ColumnType::Text},        {"mismatch", ColumnType::Text},
  };
  return columns;
}

std::vector<std::string> reportRow(const RecordComparison& r, const TensorPair& p) {
  const TensorMetrics& m = p.metrics;
  return {
      std::to_string(r.index0),
      r.name,
      r.op,
      r.module,
      format::passName(r.pass),
      std::to_string(r.step),
      std::to_string(r.rank),
      format::roleName(p.role),
      std::to_string(p.position),
      std::to_string(p.item),
      format::dtypeName(p.dtype0),
      format::dtypeName(p.dtype1),
      shapeText(p.shape0),
      shapeText(p.shape1),
      metricText(m, m.cosine),
      metricText(m, m.max_abs),
      metricText(m, m.max_rel),
      metricText(m, m.mean_abs),
      metricText(m, m.rmse),
      metricText(m, m.rel_l2),
      metricText(m, m.within_1e3),
      metricText(m, m.within_5e3),
      metricText(m, m.sign_agree),
      metricText(m, m.max_ulp),
      m.compared ? std::to_string(m.nan_mismatch) : "",
      m.compared ? std::to_string(m.inf_mismatch) : "",
      verdictName(p.verdict),
      r.origin ? "yes" : "",
      replayText(r.replay),
      m.mismatch,
  };
}

int columnIndex(const std::string& name) {
  const auto& columns = reportColumns();
  for (size_t i = 0; i < columns.size(); ++i) {
    if (name == columns[i].name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace acc::analyzer
