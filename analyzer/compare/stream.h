// compare of one pair of ranks: an aligning thread takes the aligned
// windows (analyzer/compare/windows.h) as they come, one reader thread per
// side streams records in file order (decompressing and decoding) and
// decodes the ones a window pairs, matched records meet in a join table, and
// worker threads compute the metrics. Tensor data are released as soon as
// their pair is compared; readers wait while more than the memory budget is
// held, and the aligning thread while a few windows' pairs are in flight.
#pragma once

#include <cstdint>
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "analyzer/compare/align.h"
#include "analyzer/common/result.h"
#include "analyzer/judge/thresholds.h"
#include "analyzer/compare/windows.h"

namespace acc::analyzer {

struct StreamCounters {
  std::atomic<uint64_t> pairs_done{0};
  std::atomic<uint64_t> bytes_done{0};
  // Element-wise pairs answered by an earlier pair of the same two contents
  // (format v4 content ids): compared once, however many records refer to them.
  std::atomic<uint64_t> pairs_reused{0};
  uint64_t peak_held_bytes = 0;  // most tensor data held at once (--memory-mb)
};

struct StreamJob {
  std::string file0, file1;  // the two records.acc ("": unreadable, nothing is read)
  // The windows in order, nullptr after the last; called from the
  // pipeline's aligning thread.
  std::function<std::shared_ptr<const AlignedWindow>()> next_window;
  // Pairs held at once (their windows' metadata and join entries): the
  // aligning thread waits beyond this.
  uint64_t max_pairs_in_flight = uint64_t(1) << 14;
  const Thresholds* thresholds = nullptr;
  unsigned threads = 1;
  uint64_t memory_budget = uint64_t(1) << 30;
  // Called about every 100 ms from the calling thread while it waits.
  std::function<void()> tick;
  // Called once per pair, with its position (AlignedWindow::first_pair + k)
  // and its tensor pairs, from the worker and reader threads, in the order
  // pairs complete (about file order). A pair whose records could not be
  // read again comes without tensors (and is counted in `problems`).
  std::function<void(uint64_t pair, std::vector<TensorPair>&& tensors)> deliver;
};

// Problems (unreadable records) are appended to `problems`.
void streamCompare(const StreamJob& job, StreamCounters& counters, std::vector<std::string>& problems);

}  // namespace acc::analyzer
