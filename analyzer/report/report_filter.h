// The report filters of compare (--only-failed, --min-cosine): which tensor
// pairs the per-pair reports (csv, xlsx, html) show.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyzer/common/result.h"

namespace acc::analyzer {

struct ReportFilter {
  bool only_failed = false;           // pairs whose verdict is fail
  std::optional<double> min_cosine;   // pairs whose cosine is below this (level 2 only,
                                      // uninitialized memory left out)

  bool active() const { return only_failed || min_cosine.has_value(); }
  bool keeps(const TensorPair& p) const;
  std::vector<std::string> describe() const;  // human-readable, for the reports
};

// A copy of `full` holding only the kept pairs (and records with at least
// one), origins re-indexed; `filters` says what was applied.
CompareResult filterResult(const CompareResult& full, const ReportFilter& filter);

}  // namespace acc::analyzer
