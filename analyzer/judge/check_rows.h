// check's rows, judged as their replays finish and spilled to disk at once
// (as compare's: analyzer/compare/rank_rows.h), so that check's memory does
// not grow with the recording: held are the records whose replay is in
// flight, a small reorder window, and the few referred to later (origins,
// the first failing record).
//
// Records are read in file order and replayed out of order; a record leaves
// once every record read before it has finished, then passes a window of
// kWindow records that puts it back into execution order (index) where the
// recorder's threads wrote the file slightly out of it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "analyzer/compare/rank_rows.h"
#include "analyzer/compare/record_spill.h"
#include "analyzer/common/result.h"

namespace acc::analyzer {

class CheckRows {
 public:
  static constexpr size_t kWindow = 4096;
  static constexpr size_t kMaxKeptOrigins = RankRows::kMaxKeptOrigins;  // per rank

  explicit CheckRows(RecordSpill::Part& part) : part_(part) {}

  // A record read (described, not judged yet): its slot.
  size_t add(RecordComparison&& r);
  RecordComparison& at(size_t slot) { return in_flight_.at(slot); }
  // The record at `slot` is judged.
  void done(size_t slot);
  // Every record added is done: the rest leaves, the part is closed.
  void finish();

  // Positions within the rank's part, execution order.
  std::vector<size_t> origins;
  uint64_t origins_not_kept = 0;  // beyond kMaxKeptOrigins
  size_t first_failing = SIZE_MAX;
  std::map<size_t, RecordComparison> kept;  // copies of the records at these positions
  uint64_t records = 0, tensors_compared = 0;

 private:
  void release(RecordComparison&& r);
  void emit(RecordComparison&& r);

  RecordSpill::Part& part_;
  size_t next_slot_ = 0, first_pending_ = 0;
  std::map<size_t, RecordComparison> in_flight_;  // by slot
  std::set<size_t> finished_;                     // slots judged, after first_pending_
  std::multimap<uint64_t, RecordComparison> window_;  // by DIR0 index
};

}  // namespace acc::analyzer
