// Which tensors of two matched records are compared with which (same role,
// position and item), and how: on elements, on statistics, or not at all
// (with the reason and its verdict).
#pragma once

#include <cstdint>
#include <vector>

#include "analyzer/judge/metrics.h"
#include "analyzer/common/result.h"
#include "analyzer/judge/thresholds.h"

namespace acc::analyzer {

enum class PairKind : uint8_t {
  Elements,  // level 2 on both sides: element-wise metrics
  Stats,     // statistics on both sides: level-1 metrics
  None,      // not comparable: metrics.mismatch and verdict are set
};

struct PlannedPair {
  TensorPair pair;
  PairKind kind = PairKind::None;
  const format::Tensor* t0 = nullptr;  // point into the two records
  const format::Tensor* t1 = nullptr;
  uint64_t reals = 0;                  // reals per side (Elements, Stats)
  MetricParams params;
};

// Pairs the tensors of r0 (DIR0) and r1 (DIR1) ordered by (role, position,
// item). The records must outlive the result.
std::vector<PlannedPair> planPairs(const format::OpRecord& r0, const format::OpRecord& r1,
                                   const Thresholds& thresholds);

// Fills pair.metrics for a Stats pair and judges it; for Elements pairs the
// caller computes the metrics (metrics.h) and calls judge().
void compareStats(PlannedPair& p, const Thresholds& thresholds);

// Plans and compares every pair of r0 and r1 at once, on the calling thread
// (replay results and small records; compare's stream does large ones).
std::vector<TensorPair> compareRecordsNow(const format::OpRecord& r0, const format::OpRecord& r1,
                                          const Thresholds& thresholds);

}  // namespace acc::analyzer
