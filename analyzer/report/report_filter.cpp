#include "analyzer/report/report_filter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace acc::analyzer {

bool ReportFilter::keeps(const TensorPair& p) const {
  if (only_failed && p.verdict != Verdict::Fail) return false;
  if (min_cosine) {
    const TensorMetrics& m = p.metrics;
    if (p.uninitialized || !m.compared || m.from_stats || std::isnan(m.cosine) || !(m.cosine < *min_cosine)) return false;
  }
  return true;
}

std::vector<std::string> ReportFilter::describe() const {
  std::vector<std::string> out;
  if (only_failed) out.push_back("only failing tensor pairs (--only-failed)");
  if (min_cosine) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "only tensor pairs with cosine < %.10g (--min-cosine)", *min_cosine);
    out.push_back(buf);
  }
  return out;
}

CompareResult filterResult(const CompareResult& full, const ReportFilter& filter) {
  // Everything but the rows and origins, which are rebuilt below: a field
  // added to CompareResult cannot be forgotten here.
  CompareResult out = full;
  out.records.clear();
  out.origins.clear();
  for (const std::string& f : filter.describe()) out.filters.push_back(f);
  if (full.spill) {
    // The spill is shared: its rows are filtered as they are read back.
    out.keeps = [filter](const TensorPair& p) { return filter.keeps(p); };
    for (size_t o : full.origins) {
      const RecordComparison& r = recordAt(full, o);
      if (std::any_of(r.tensors.begin(), r.tensors.end(), [&](const TensorPair& p) { return filter.keeps(p); })) {
        out.origins.push_back(o);
      }
    }
    return out;
  }
  std::vector<size_t> new_index(full.records.size(), SIZE_MAX);
  for (size_t i = 0; i < full.records.size(); ++i) {
    const RecordComparison& r = full.records[i];
    RecordComparison copy;
    bool any = false;
    for (const TensorPair& p : r.tensors) {
      if (!filter.keeps(p)) continue;
      if (!any) {
        copy = r;
        copy.tensors.clear();
        any = true;
      }
      copy.tensors.push_back(p);
    }
    if (!any) continue;
    new_index[i] = out.records.size();
    out.records.push_back(std::move(copy));
  }
  for (size_t o : full.origins) {
    if (new_index[o] != SIZE_MAX) out.origins.push_back(new_index[o]);
  }
  return out;
}

}  // namespace acc::analyzer
