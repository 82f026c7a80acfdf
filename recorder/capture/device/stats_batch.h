// Device statistics in batches. A device kernel launch costs the host
// microseconds, so summarising each tensor of each op on its own (about 15
// launches a tensor) made level 1 cost what its launches cost. Instead the
// device tensors of many ops wait here, held by reference, and are
// summarised together (stats_kernels.h: one launch of the device's own
// kernel where it has one, else about 20 ATen kernels per element type and
// chunk; then one copy to the host and one event per stream), when
//  - the batch holds ACC_DEVICE_BATCH tensors, or the tensors only acc still
//    holds take an eighth of ACC_BUFFER_MB, or, on a device with its own
//    statistics kernel (a batch costs it two launches), all its tensors
//    take half of ACC_BUFFER_MB;
//  - a training step ends (Session::advanceStep) or the recording stops;
//  - the writer has waited a while for one of its records (nudge());
//  - a compiled region or a collective starts (they write memory behind the
//    dispatcher's back).
// An op about to write into a waiting tensor (its schema says so: in-place
// ops, out= arguments, a nested op that updates running statistics) first
// has that tensor summarised on a device with a statistics kernel of its
// own (one launch; the few values join the batch's result when it runs),
// or else copied on the device (one launch and the copy's memory), so the
// batch sums what the op that produced it saw. A write the dispatcher does
// not show (memory written through data_ptr()) changes the tensor's version
// counter, or nothing acc can see: the first is caught when the batch runs,
// and those statistics are dropped and counted, never written wrong.
#pragma once

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/util/SmallVector.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <memory_resource>
#include <optional>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/record.h"
#include "recorder/side_heap.h"
#include "recorder/capture/device/stats_kernels.h"

namespace acc::recorder {

class StatsBatch;

// One batch: open while tensors join it, then launched, its partials on
// their way to the host behind one event per device stream.
class StatsFlight {
 public:
  bool launched() const { return launched_.load(std::memory_order_acquire); }
  // Launched, and every event has completed; never blocks. May throw (a
  // device error).
  bool arrived() const;
  // After arrived(): tensor `slot`'s statistics, or nullopt when they could
  // not be taken (changed behind the dispatcher, or the kernels failed).
  std::optional<format::Stats> stats(uint32_t slot) const;

 private:
  friend class StatsBatch;
  struct Part {
    c10::Stream stream;
    std::unique_ptr<StatsKernels> kernels;
    at::Tensor host;  // what the kernels made, copied without blocking
    std::optional<c10::Event> event;
    bool failed = false;
  };
  struct Slot {
    uint32_t part = 0, index = 0;
    bool stale = false;
  };
  std::vector<Part> parts_;
  std::vector<Slot> slots_;
  std::atomic<bool> launched_{false};
  mutable std::atomic<bool> arrived_{false};
};

// What a record keeps of one device tensor's statistics.
struct StatsTicket {
  std::shared_ptr<StatsFlight> flight;
  uint32_t slot = 0;
  StatsBatch* owner = nullptr;
};

struct StatsBatchCounts {
  uint64_t batches = 0;   // launched
  uint64_t tensors = 0;   // summarised
  uint64_t bytes = 0;     // of the tensors summarised: what the statistics read on the device
  uint64_t copies = 0;    // waiting tensors copied before an op wrote into them
  uint64_t early = 0;     // launches summarising waiting tensors before an op wrote into them (one per op)
  uint64_t stale = 0;     // changed behind the dispatcher before their batch ran: no statistics
  uint64_t failed = 0;    // tensors whose batch's kernels failed: no statistics
};

class StatsBatch {
 public:
  // A batch runs when it holds `max_tensors` (1: every tensor alone, at
  // once) or when the waiting tensors only acc still holds take more than
  // `max_alone_bytes`.
  StatsBatch(size_t max_tensors, uint64_t max_alone_bytes);
  StatsBatch(const StatsBatch&) = delete;
  StatsBatch& operator=(const StatsBatch&) = delete;

  // Queues the statistics of device tensor `t` (under a CaptureGuard); the
  // batch may run now.
  StatsTicket add(const at::Tensor& t);
  // Before forward op `fn` runs (after its inputs were captured): copies the
  // waiting tensors it writes into.
  void beforeOp(const at::RecordFunction& fn);
  // Runs the open batch, if any, on the calling thread.
  void flush();
  // Runs `flight` if it is still the open batch (the writer waits for it).
  void flushIfOpen(const StatsFlight* flight);

  StatsBatchCounts counts() const;
  nlohmann::json countsJson() const;
  // No tensor waits: beforeOp() has nothing to look at (read without the
  // lock, as beforeOp() does first).
  bool idle() const { return size_.load(std::memory_order_relaxed) == 0; }

 private:
  struct Waiting {
    at::Tensor tensor;  // undefined once summarised early
    uint32_t version = 0;
    c10::Stream stream;
    // Once summarised early: the early launch's [n, kDeviceStatsSize] result
    // on the device, and this tensor's row in it.
    at::Tensor summary;
    int64_t summary_row = 0;
    uint64_t elements = 0;  // the summarised tensor's (reals)
    // tensor's storage while it waits unsummarised, else null: compared by
    // protectLocked() for every waiting tensor, without a pointer chase.
    const void* storage = nullptr;
  };
  void launchLocked();
  bool aloneOverLimitLocked();
  // One waiting tensor as aloneOverLimitLocked() sees it.
  struct Holder {
    const c10::TensorImpl* impl = nullptr;
    const at::Tensor* tensor = nullptr;
    const void* storage = nullptr;
    size_t entries = 0;  // waiting entries holding it, and waiting views of it
  };
  using Storages = c10::SmallVector<const void*, 4>;
  void protectLocked(const Storages& storages);

  const size_t max_tensors_;
  const uint64_t max_alone_bytes_;
  mutable std::mutex mutex_;
  std::shared_ptr<StatsFlight> open_;
  std::vector<Waiting> waiting_;
  std::vector<Waiting> spare_waiting_;  // the last batch's, emptied: its buffer for the next
  // Storage -> waiting tensors on it: a node per waiting storage, from a
  // pool of its own rather than malloc.
  SideHeap heap_;
  std::pmr::unordered_map<const void*, uint32_t> storages_{heap_.resource()};
  std::atomic<size_t> size_{0};  // waiting_.size(), read without the lock
  // aloneOverLimitLocked()'s buffer, kept from look to look: with large
  // tensors it looks at every one that joins (hundreds a step), and hash
  // maps built each time cost a malloc per waiting tensor.
  std::vector<Holder> holders_;
  uint64_t bytes_since_check_ = 0;
  uint64_t waiting_bytes_ = 0;   // of the waiting tensors, held or not
  bool fused_batch_ = false;     // the open batch's device has its own kernel
  StatsBatchCounts counts_;
};

}  // namespace acc::recorder
