#include "analyzer/compare/modules.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace acc::analyzer {

std::vector<ModuleSummary> summarizeModules(const CompareResult& result) {
  std::map<std::string, size_t> at;  // module -> index in `out`
  std::vector<ModuleSummary> out;
  std::vector<size_t> first_seen;
  // When a module's first failure ran: step, then index, then rank.
  const auto firstFail = [](const ModuleSummary& m) {
    return std::make_tuple(m.first_failing_step, m.first_failing_index, m.first_failing_rank);
  };
  forEachRecord(result, [&](size_t i, const RecordComparison& r) {
    if (!r.has_module || isGradientRecord(r)) return;  // gradients have their own map
    auto [it, added] = at.emplace(r.module, out.size());
    if (added) {
      out.push_back({});
      out.back().module = r.module;
      first_seen.push_back(i);
    }
    ModuleSummary& m = out[it->second];
    ++m.records;
    if (r.verdict == Verdict::Warn) ++m.warn;
    if (r.origin) ++m.origins;
    if (std::isfinite(r.output_error) && (m.worst_record.empty() || r.output_error > m.worst_error)) {
      m.worst_error = r.output_error;
      m.worst_record = r.name;
    }
    if (r.verdict != Verdict::Fail) return;
    ++m.fail;
    if (m.first_failing.empty() || std::make_tuple(r.step, r.index0, r.rank) < firstFail(m)) {
      m.first_failing = r.name;
      m.first_failing_step = r.step;
      m.first_failing_rank = r.rank;
      m.first_failing_index = r.index0;
    }
  });
  std::vector<size_t> order(out.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const bool fa = out[a].fail > 0, fb = out[b].fail > 0;
    if (fa != fb) return fa;
    if (fa) return firstFail(out[a]) < firstFail(out[b]);
    return first_seen[a] < first_seen[b];
  });
  std::vector<ModuleSummary> sorted;
  sorted.reserve(out.size());
  for (size_t k : order) sorted.push_back(std::move(out[k]));
  return sorted;
}

}  // namespace acc::analyzer
