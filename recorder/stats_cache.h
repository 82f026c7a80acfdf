// Reuses the statistics of a tensor an op just produced when the next op on
// the same thread takes it as input (conv -> batch_norm -> relu): the most
// common case of the same bytes being summarized twice.
//
// An entry is valid only for the op that starts right after it was stored:
// any op in between (one that could write to the tensor through another
// alias) invalidates it. The tensor's version counter and a weak reference
// (so its address cannot be reused by another tensor) guard the rest.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "format/record.h"

namespace acc::recorder {

class StatsCache {
 public:
  // Called at the start of every op observed on this thread.
  void opStarted() { ++ops_; }
  std::optional<format::Stats> find(const at::Tensor& t) const;
  void store(const at::Tensor& t, const format::Stats& stats);

 private:
  struct Entry {
    c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> impl;
    int64_t version;
    const void* data;
    uint64_t ops;  // ops_ when stored
    format::Stats stats;
  };
  static bool cacheable(const at::Tensor& t);

  uint64_t ops_ = 0;
  std::vector<Entry> entries_;
};

// The calling thread's cache.
StatsCache& threadStatsCache();

}  // namespace acc::recorder
