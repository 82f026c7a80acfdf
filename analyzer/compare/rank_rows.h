// One rank pair's rows, judged as its pairs come out of pass 2 and spilled
// to disk at once (analyzer/compare/record_spill.h), so that compare holds
// no more of them than a small reorder window and the few it must refer to
// later: origins, replay candidates, the first failing record.
//
// Pairs complete in about file order; they are put back into execution
// order, then each is described (names, op, step), judged at the precision
// the runs allow and by the rank's OriginJudge, given its stack and, for a
// level-1 candidate, the environment that re-records its region, and
// appended to the rank's part of the spill.
#pragma once

#include <climits>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <mutex>
#include <vector>

#include "analyzer/compare/align.h"
#include "analyzer/compare/origins.h"
#include "analyzer/compare/record_spill.h"
#include "analyzer/compare/result.h"
#include "analyzer/compare/scan.h"
#include "analyzer/compare/thresholds.h"

namespace acc::analyzer {

class RankRows {
 public:
  // Origins copied beyond this many are counted, not kept (report.csv has them all).
  static constexpr size_t kMaxKeptOrigins = 10000;

  RankRows(const ScannedRank& a, const ScannedRank& b, const std::vector<AlignedPair>& pairs,
           const Thresholds& thresholds, size_t replay_limit, RecordSpill::Part& part);

  // A pair compared (its index in `pairs`), from any thread, in any order.
  void deliver(size_t pair, std::vector<TensorPair>&& tensors);
  // After pass 2: the pairs left (never delivered: described without
  // tensors), then the part is closed.
  void finish();

  // Positions within the rank's part (= pair indices), execution order.
  std::vector<size_t> origins;
  std::vector<size_t> candidates;  // origins replay may judge (level 2), at most the replay limit
  uint64_t candidates_skipped = 0;  // beyond the limit
  uint64_t origins_not_kept = 0;    // beyond kMaxKeptOrigins
  size_t first_failing = SIZE_MAX;
  std::map<size_t, RecordComparison> kept;  // copies of the records at these positions
  uint64_t tensors_compared = 0;

 private:
  void emit(size_t k, std::vector<TensorPair>&& tensors);
  void attachStack(RecordComparison& r, const RecordMeta& m);
  void forwardStacksOf(const RecordMeta& m);
  void attachRerecord(RecordComparison& r, size_t k) const;

  const ScannedRank& a_;
  const ScannedRank& b_;
  const std::vector<AlignedPair>& pairs_;
  const Thresholds& thresholds_;
  const size_t replay_limit_;
  RecordSpill::Part& part_;
  OriginJudge judge_;
  // Forward records' stack ids by name, of step stack_step_ only.
  std::unordered_map<Interned, uint64_t> forward_stack_;
  int64_t stack_step_ = INT64_MIN;

  std::mutex mutex_;
  std::map<size_t, std::vector<TensorPair>> waiting_;  // delivered ahead of `next_`
  size_t next_ = 0;
};

}  // namespace acc::analyzer
