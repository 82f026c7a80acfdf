// Pass 2 of compare for one pair of ranks: one reader thread per side
// streams records in file order (decompressing and decoding), matched
// records meet in a join table, and worker threads compute the metrics.
// Tensor data are released as soon as their pair is compared; readers wait
// while more than the memory budget is held.
#pragma once

#include <cstdint>
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "analyzer/compare/align.h"
#include "analyzer/compare/result.h"
#include "analyzer/compare/scan.h"
#include "analyzer/compare/thresholds.h"

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
  const ScannedRank* side0 = nullptr;
  const ScannedRank* side1 = nullptr;
  const std::vector<AlignedPair>* pairs = nullptr;  // what to compare
  const Thresholds* thresholds = nullptr;
  unsigned threads = 1;
  uint64_t memory_budget = uint64_t(1) << 30;
  // Called about every 100 ms from the calling thread while it waits.
  std::function<void()> tick;
  // Called once per pair compared, with its index in `pairs` and its tensor
  // pairs, from the worker threads, in the order pairs complete (about file
  // order). A pair whose records could not be read again is never delivered.
  std::function<void(size_t pair, std::vector<TensorPair>&& tensors)> deliver;
};

// Problems (unreadable records) are appended to `problems`.
void streamCompare(const StreamJob& job, StreamCounters& counters, std::vector<std::string>& problems);

}  // namespace acc::analyzer
