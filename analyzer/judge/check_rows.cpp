#include "analyzer/judge/check_rows.h"

#include <algorithm>

#include "analyzer/report/summary.h"

namespace acc::analyzer {

size_t CheckRows::add(RecordComparison&& r) {
  const size_t slot = next_slot_++;
  in_flight_.emplace(slot, std::move(r));
  return slot;
}

void CheckRows::done(size_t slot) {
  finished_.insert(slot);
  // Records leave in the order they were read.
  while (!finished_.empty() && *finished_.begin() == first_pending_) {
    finished_.erase(finished_.begin());
    auto it = in_flight_.find(first_pending_++);
    release(std::move(it->second));
    in_flight_.erase(it);
  }
}

void CheckRows::release(RecordComparison&& r) {
  window_.emplace(r.index0, std::move(r));
  if (window_.size() <= kWindow) return;
  auto first = window_.begin();
  emit(std::move(first->second));
  window_.erase(first);
}

void CheckRows::finish() {
  // Every record is done by now; one that is not (a replay lost) still leaves.
  for (auto& [slot, r] : in_flight_) release(std::move(r));
  in_flight_.clear();
  finished_.clear();
  for (auto& [index, r] : window_) emit(std::move(r));
  window_.clear();
  part_.close();
}

void CheckRows::emit(RecordComparison&& r) {
  const size_t position = records++;
  tensors_compared += static_cast<uint64_t>(
      std::count_if(r.tensors.begin(), r.tensors.end(), [](const TensorPair& p) { return p.metrics.compared; }));
  bool keep = false;
  if (r.origin) {
    origins.push_back(position);
    keep = origins.size() <= kMaxKeptOrigins;
    if (!keep) ++origins_not_kept;
  }
  if (first_failing == SIZE_MAX && failsFirstCandidate(r)) {
    first_failing = position;
    keep = true;
  }
  part_.append(r);
  if (keep) kept.emplace(position, std::move(r));
}

}  // namespace acc::analyzer
