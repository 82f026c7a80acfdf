// ACC_WATCH=naninf: watches every recorded op of a long run for the first
// NaN or infinity, and writes nothing but what it finds.
//
// The observer hands each op's record over when the op has finished, at
// level 0 with its tensors held (TensorHold). Outputs are checked where they
// live: CPU ones at once (finite_check.h), device ones by their NaN and Inf
// counts in the device statistics' batches (stats_batch.h), copied behind
// the op's kernels and read once an event says they arrived, so no op
// waits for its device; an op that fills its output with one value
// (zero_grad's zero_ on torch 1.13, ones_like, fill_) is taken at its word,
// as level 1 takes its statistics (tensor_stats.h, constantStats), and
// counts nothing. What an in-place op overwrites is known from the
// in-place op that wrote it where nothing wrote it since (summarised_);
// else it joins a batch, which the op's write then launches. Ops are
// judged in the order they finished; judged-finite ops keep only their
// metadata, the last `ACC_WATCH_CONTEXT` of them.
//
// Infinities the program means are not finds: an op given a non-finite
// scalar argument (torch.full(..., -inf), masked_fill(mask, -inf): the
// attention masks every transformer builds) makes them, and an op whose
// input holds them passes them on (scores plus mask) as long as no NaN
// appears. A NaN made from them (softmax of a row masked whole) is a find.
//
// The first other op with a non-finite output is the find. Only then does the
// watch wait for the device, once: it reads the op's inputs to tell an op
// that made the value (inputs all finite: the kernel to suspect) from one
// that was handed it (data, or a value made before the watch or by an op
// it does not see), writes the kept metadata and the op itself at level 2
// (from the tensors it still holds), says so in one stderr line and stops
// watching. Tensors are held for at most kHeldOps ops (ACC_BUFFER_MB) awaiting
// their check; a find beyond that is written with metadata only.
#pragma once

#include <c10/core/Event.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/intrusive_ptr.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "env/config.h"
#include "recorder/observe/captured_op.h"
#include "recorder/capture/device/stats_batch.h"

namespace acc::recorder {

class Session;

class Watch {
 public:
  // Ops awaiting their device check whose tensors are held, and the bytes
  // of their storages (ACC_BUFFER_MB, the budget of what acc keeps in
  // flight): a bound on the memory the watch keeps from being freed while
  // a device runs behind its host. 256 ops covers a GPU's launch queue with
  // the watch's own kernels in it; the oldest are held (they are judged
  // next), later ones beyond the bound go unheld.
  static constexpr size_t kHeldOps = 256;
  // Storages remembered as holding intended infinities.
  static constexpr size_t kIntended = 256;

  // Device tensors are checked in `batch`'s batches (NaN and Inf counts).
  Watch(const env::Config& config, StatsBatch& batch)
      : held_bytes_bound_(static_cast<size_t>(config.buffer_mb) << 20),
        context_size_(config.watch_context),
        abort_(config.watch_abort),
        batch_(batch) {}

  // Op thread, at the start of an in-place op (its inputs captured): what
  // the input it overwrites (argument 0) holds before the op runs.
  void noteOverwrittenInputs(CapturedOp& record);
  // Op thread, when a record is complete: checks its outputs, judges every
  // op whose check has arrived, and on a find writes it (and exits the
  // program with status 3 under ACC_WATCH_ABORT=1).
  void finish(Session& s, std::unique_ptr<CapturedOp> record);
  // At exit: waits for the checks still on their way and judges them.
  void drain(Session& s);

  nlohmann::json toJson() const;  // manifest "watch"
  // The end-of-run line when nothing was found; empty after a find.
  std::string summary() const;

 private:
  // A device tensor's NaN and Inf counts, on their way in a batch.
  struct Pending {
    size_t tensor;  // in the record
    StatsTicket stats;
  };
  struct Entry {
    std::unique_ptr<CapturedOp> op;
    std::vector<int8_t> nonfinite;      // per record tensor: -1 unknown, else a Finiteness
    std::vector<bool> overwritten;      // inputs the op itself wrote
    std::vector<Pending> device;
    std::chrono::steady_clock::time_point since;  // when the op finished
    std::vector<const c10::StorageImpl*> storages;  // per record tensor, when the op ended
    std::vector<bool> intended;  // inputs holding the program's own infinities (intended())
    bool released = false;              // tensors not held (kHeldOps, held_bytes_bound_) or let go
    size_t held_bytes = 0;
  };

  // An entry with the vectors of one judged before on this thread.
  struct Spares;
  static Entry takeSpare();
  static void keepSpare(Entry& e);  // its vectors, emptied, for takeSpare()
  static void swapVectors(Entry& a, Entry& b);

  void check(Entry& e);
  static bool arrived(const Entry& e);
  static void read(Entry& e);
  // Holds mu_: starts the batch an entry waits for, once it has waited long
  // enough or too many entries wait behind it.
  void nudge(const Entry& e);
  // Holds mu_. Judges arrived entries in order; true once something is found.
  bool judge(Session& s);
  void found(Session& s, Entry& e);  // holds mu_
  void hold(Entry& e);   // holds mu_: keeps the entry's tensors, or not
  // Holds mu_. Whether an op's non-finite outputs are infinities the
  // program means, not a find; remembers them as such.
  bool intended(Entry& e);
  bool isIntended(const c10::StorageImpl* storage) const;
  void letGo(Entry& e);  // holds mu_
  // What an in-place op overwrites, where the watch summarised it as the
  // output of the in-place op before it (an optimizer's chains): that
  // op's ticket, or what it said once arrived (a Finiteness as int8_t).
  // False: unknown here (then the value joins the batch, and the op's write
  // costs a launch that summarises it first: StatsBatch::beforeOp).
  bool knownBefore(const at::Tensor& t, StatsTicket& ticket, int8_t& finiteness);
  // The output `t` (its version `version`) of an in-place op, summarised
  // by `ticket`, or of an op that filled it, known to be `finiteness`.
  void noteSummarised(const at::Tensor& t, uint32_t version, const StatsTicket& ticket, int8_t finiteness = -1);
  void sweepSummarised();  // holds summarised_mu_
  struct Summarised;
  static void settle(Summarised& s);  // holds summarised_mu_

  const size_t held_bytes_bound_;
  const uint64_t context_size_;
  const bool abort_;
  StatsBatch& batch_;
  std::atomic<bool> done_{false};
  std::atomic<uint64_t> watched_{0};
  std::atomic<uint64_t> intended_ops_{0};  // ops whose infinities were the program's own
  mutable std::mutex mu_;
  std::deque<Entry> pending_;
  size_t held_ops_ = 0;    // entries of pending_ holding their tensors
  size_t held_bytes_ = 0;  // and their storages' bytes
  std::deque<std::unique_ptr<CapturedOp>> context_;  // judged finite, metadata only
  // Storages holding intended infinities, newest last (weak: the watch must
  // not keep a mask alive; a weak reference also keeps its address from
  // being reused, so a match is the same storage).
  std::deque<c10::weak_intrusive_ptr<c10::StorageImpl>> intended_;
  // The latest value the watch summarised of each tensor an in-place op
  // wrote, by TensorImpl (weak: a match is the same, live tensor), with
  // its version then: the next in-place op on it overwrites that value
  // when the version is unchanged. Tickets of batches that have arrived
  // become their Finiteness at each sweep, so no old batch stays alive
  // here. Op threads; apart from mu_.
  struct Summarised {
    c10::weak_intrusive_ptr<c10::TensorImpl> impl;
    uint32_t version = 0;
    const void* data = nullptr;  // compared only: `x.data = y` keeps the version, not the memory
    StatsTicket ticket;      // while its batch is on its way
    int8_t finiteness = -1;  // once arrived: a Finiteness
  };
  static constexpr size_t kSweepEvery = 256;  // notes between sweeps
  std::mutex summarised_mu_;
  std::unordered_map<const c10::TensorImpl*, Summarised> summarised_;
  size_t notes_since_sweep_ = 0;
  std::atomic<uint64_t> overwritten_known_{0};  // overwritten values known without a batch entry
  std::atomic<uint64_t> filled_known_{0};       // outputs known from the value their op filled them with
  // Apart from mu_: the writer thread reads it for the manifest while a
  // find, holding mu_, may wait for the writer.
  mutable std::mutex result_mu_;
  nlohmann::json result_;  // set by found()
};

}  // namespace acc::recorder
