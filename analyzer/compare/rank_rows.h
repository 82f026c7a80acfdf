// One rank pair's rows, judged as its pairs come out of the comparison and
// spilled to disk at once (analyzer/compare/record_spill.h), so that compare
// holds no more of them than a small reorder window and the few it must refer to
// later: origins, replay candidates, the first failing record.
//
// Pairs complete in about file order; they are put back into execution
// order (their windows' metadata held until then), then each is described (names, op, step), judged at the precision
// the runs allow and by the rank's OriginJudge, given its stack and, for a
// level-1 candidate, the environment that re-records its region, and
// appended to the rank's part of the spill.
#pragma once

#include <climits>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <unordered_map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "analyzer/compare/align.h"
#include "analyzer/judge/origins.h"
#include "analyzer/compare/record_spill.h"
#include "analyzer/common/result.h"
#include "analyzer/compare/meta_stream.h"
#include "analyzer/judge/thresholds.h"
#include "analyzer/compare/windows.h"

namespace acc::analyzer {

class RankRows {
 public:
  // Origins copied beyond this many are counted, not kept (report.csv has them all).
  static constexpr size_t kMaxKeptOrigins = 10000;

  // `stacks0`: DIR0's stacks, filled while the rows come.
  RankRows(const RankRecording& a, const RankRecording& b, const StackTable& stacks0, const Thresholds& thresholds,
           size_t replay_limit, RecordSpill::Part& part);

  // Each window, in order, before any of its pairs is delivered.
  void addWindow(std::shared_ptr<const AlignedWindow> window);
  // A pair compared (its position), from any thread, in any order.
  void deliver(uint64_t pair, std::vector<TensorPair>&& tensors);
  // At the end: the pairs left (never delivered: described without
  // tensors), then the part is closed.
  void finish();

  // Positions within the rank's part (= pair positions), execution order.
  std::vector<size_t> origins;
  std::vector<size_t> candidates;  // origins replay may judge (level 2), at most the replay limit
  uint64_t candidates_skipped = 0;  // beyond the limit
  std::vector<size_t> screened;     // candidates below the fail threshold (also in `candidates`)
  uint64_t screened_skipped = 0;    // screened beyond the limit: not replayed, no origin
  uint64_t origins_not_kept = 0;    // beyond kMaxKeptOrigins
  size_t first_failing = SIZE_MAX;
  std::map<size_t, RecordComparison> kept;  // copies of the records at these positions
  uint64_t tensors_compared = 0;
  uint64_t size() const { return next_; }  // rows emitted

 private:
  void emit(uint64_t k, std::vector<TensorPair>&& tensors);
  void attachStack(RecordComparison& r, const RecordMeta& m);
  void forwardStacksOf(const AlignedWindow& w, int64_t step);
  void attachRerecord(RecordComparison& r, const AlignedWindow& w, const AlignedPair& p) const;
  uint64_t pairsAdded() const;

  const RankRecording& a_;
  const RankRecording& b_;
  const StackTable& stacks0_;
  const Thresholds& thresholds_;
  const size_t replay_limit_;
  RecordSpill::Part& part_;
  // DIR1's ACC_REFERENCE finds (records written at level 2 in a level-1
  // run): replayed as candidates though judged on statistics.
  const std::set<std::string> finds1_;
  OriginJudge judge_;
  // Forward records' stack ids by name, of step stack_step_ only (a step
  // longer than a window gathers them over its windows).
  std::unordered_map<Interned, uint64_t> forward_stack_;
  int64_t stack_step_ = INT64_MIN;
  uint64_t stacks_of_ = UINT64_MAX;  // first_pair of the window forward_stack_ last gathered

  std::mutex mutex_;
  std::deque<std::shared_ptr<const AlignedWindow>> windows_;  // from the one holding `next_` on
  std::map<uint64_t, std::vector<TensorPair>> waiting_;  // delivered ahead of `next_`
  uint64_t next_ = 0;
};

}  // namespace acc::analyzer
