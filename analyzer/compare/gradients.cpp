#include "analyzer/compare/gradients.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "analyzer/judge/origins.h"

namespace acc::analyzer {

std::vector<GradientRow> gradientMap(const CompareResult& result) {
  std::vector<GradientRow> rows;
  std::map<std::pair<int64_t, std::string>, size_t> at;
  forEachRecord(result, [&](size_t, const RecordComparison& r) {
    if (!isGradientRecord(r) || r.tensors.empty()) return;
    const TensorPair& p = r.tensors.front();
    const std::string parameter = r.name.substr(r.name.find("::") + 2);
    auto [it, added] = at.emplace(std::make_pair(r.rank, parameter), rows.size());
    if (added) rows.push_back({parameter, r.rank, {}});
    GradientCell cell;
    cell.step = r.step;
    cell.error = carriedError(p);
    cell.sign_agree = p.metrics.compared ? p.metrics.sign_agree : std::nan("");
    cell.verdict = r.verdict;
    rows[it->second].cells.push_back(cell);
  });
  for (GradientRow& row : rows) {
    std::stable_sort(row.cells.begin(), row.cells.end(),
                     [](const GradientCell& a, const GradientCell& b) { return a.step < b.step; });
  }
  return rows;
}

GradientPart firstFailingGradient(const std::vector<GradientRow>& rows) {
  GradientPart first;
  for (const GradientRow& row : rows) {
    for (const GradientCell& cell : row.cells) {
      if (cell.verdict != Verdict::Fail) continue;
      if (!first.cell || cell.step < first.cell->step) first = {&row, &cell};
      break;  // later cells of this row fail later
    }
  }
  return first;
}

}  // namespace acc::analyzer
