#include "analyzer/compare/modules.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace acc::analyzer {

std::vector<ModuleSummary> summarizeModules(const std::vector<RecordComparison>& records) {
  std::map<std::string, size_t> at;  // module -> index in `out`
  std::vector<ModuleSummary> out;
  std::vector<size_t> first_seen;
  std::vector<std::tuple<int64_t, uint64_t, int64_t>> first_fail;  // step, index, rank
  for (size_t i = 0; i < records.size(); ++i) {
    const RecordComparison& r = records[i];
    if (!r.has_module || isGradientRecord(r)) continue;  // gradients have their own map
    auto [it, added] = at.emplace(r.module, out.size());
    if (added) {
      out.push_back({});
      out.back().module = r.module;
      first_seen.push_back(i);
      first_fail.emplace_back(0, 0, 0);
    }
    ModuleSummary& m = out[it->second];
    ++m.records;
    if (r.verdict == Verdict::Warn) ++m.warn;
    if (r.origin) ++m.origins;
    if (std::isfinite(r.output_error) && (m.worst_record.empty() || r.output_error > m.worst_error)) {
      m.worst_error = r.output_error;
      m.worst_record = r.name;
    }
    if (r.verdict != Verdict::Fail) continue;
    ++m.fail;
    const auto when = std::make_tuple(r.step, r.index0, r.rank);
    if (m.first_failing.empty() || when < first_fail[it->second]) {
      first_fail[it->second] = when;
      m.first_failing = r.name;
      m.first_failing_step = r.step;
      m.first_failing_rank = r.rank;
      m.first_failing_index = r.index0;
    }
  }
  std::vector<size_t> order(out.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const bool fa = out[a].fail > 0, fb = out[b].fail > 0;
    if (fa != fb) return fa;
    if (fa) return first_fail[a] < first_fail[b];
    return first_seen[a] < first_seen[b];
  });
  std::vector<ModuleSummary> sorted;
  sorted.reserve(out.size());
  for (size_t k : order) sorted.push_back(std::move(out[k]));
  return sorted;
}

}  // namespace acc::analyzer
