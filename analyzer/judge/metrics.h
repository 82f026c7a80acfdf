// Metrics of one tensor pair (docs/METRICS.md): element-wise on full data
// (level 2), in chunks that can be computed in parallel and merged, or from
// the statistics alone (level 1).
#pragma once

#include <cstddef>
#include <cstdint>

#include "analyzer/common/elements.h"
#include "analyzer/judge/finite_sums.h"
#include "analyzer/common/result.h"

namespace acc::analyzer {

// Sums, maxima and counts over a range of elements; merge() combines ranges.
class MetricAccumulator {
 public:
  // b: DIR0 (reference), t: DIR1 (tested); `count` reals each.
  void add(const double* b, const double* t, size_t count, const MetricParams& p);
  void merge(const MetricAccumulator& other);
  TensorMetrics finish(const MetricParams& p) const;

 private:
  void addWithSpecials(const double* b, const double* t, size_t count, const MetricParams& p);
  uint64_t total_ = 0;  // reals seen
  uint64_t agree_ = 0;  // positions non-finite on both sides alike (NaN/NaN, +Inf/+Inf)
  uint64_t nan_mismatch_ = 0, inf_mismatch_ = 0;
  FiniteSums s_;
};

// Element-wise metrics of two whole buffers (tests and small tensors).
TensorMetrics elementMetrics(const char* data0, format::Dtype d0, const char* data1, format::Dtype d1,
                             size_t reals, const MetricParams& p);

// Level-1 metrics from the two tensors' statistics; `reals` is the number of
// reals per tensor (numel, twice that for complex).
TensorMetrics statsMetrics(const format::Stats& s0, const format::Stats& s1, bool same_bits_layout,
                           uint64_t reals, double small);

}  // namespace acc::analyzer
