// An op record while it is being captured: the format's record plus what its
// device tensors still owe it (statistics and data on their way to the host).
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Device.h>
#include <c10/core/Event.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "format/record.h"
#include "recorder/capture/content_store.h"
#include "recorder/capture/device/stats_batch.h"
#include "recorder/observe/op_writes.h"
#include "recorder/per_thread.h"
#include "recorder/write/data_buffer.h"

namespace acc::recorder {

class RecordBatch;

// Values of one device tensor, copied into host memory behind the op's
// kernels; readable once the event that follows the copy has completed.
struct DeviceValues {
  size_t tensor = 0;  // index in tensors
  at::Tensor stats;   // host, kDeviceStatsSize float64 (level >= 1, summarised alone), or undefined
  StatsTicket batched;  // level >= 1, summarised in a batch (stats_batch.h)
  at::Tensor data;    // host, the tensor's bytes in row-major order (level 2), or undefined
};

// What ACC_WATCH and ACC_REFERENCE keep of an op until it is judged
// (watch.h, reference.h): the op's tensors, one per entry of `tensors`, with
// their versions when captured, and what an in-place op's overwritten input
// held before the op ran (the watch: its finiteness; the reference: a copy,
// for the find's level-2 record).
struct TensorHold {
  std::vector<at::Tensor> tensors;
  std::vector<uint32_t> versions;
  std::vector<size_t> overwritten;           // indices in `tensors`
  std::vector<int8_t> overwritten_nonfinite; // per entry: a Finiteness (CPU), -1 (device: below)
  std::vector<StatsTicket> overwritten_stats;  // 1 per device entry, in order
  std::vector<at::Tensor> before;  // ACC_REFERENCE: per `overwritten` entry, its values at the op's start
  std::vector<c10::Storage> storages;  // ACC_REFERENCE: a backward record's forward inputs', let go

  // A hold for a new record: one this thread let go of, emptied, with its
  // vectors' room, when it has one (ACC_REFERENCE makes one per op).
  static std::unique_ptr<TensorHold> take() {
    Spares* s = PerThread<Spares>::get();
    if (s == nullptr || s->n == 0) return std::make_unique<TensorHold>();
    return std::unique_ptr<TensorHold>(s->held[--s->n]);
  }
  // Lets go of its tensors (an op thread's work: the last reference to one
  // with a Python object takes the GIL) and keeps it for take().
  static void recycle(std::unique_ptr<TensorHold> h) {
    if (!h) return;
    h->tensors.clear();
    h->versions.clear();
    h->overwritten.clear();
    h->overwritten_nonfinite.clear();
    h->overwritten_stats.clear();
    h->before.clear();
    h->storages.clear();
    Spares* s = PerThread<Spares>::get();
    if (s != nullptr && s->n < kSpares) s->held[s->n++] = h.release();
  }

 private:
  // As many as the watch holds ops awaiting their device check
  // (Watch::kHeldOps): on a device a step's holds are let go together when
  // its batch arrives, and each hold taken beyond the spares grows its
  // vectors anew. On the heap (per_thread.h): 2 KB.
  static constexpr int kSpares = 256;
  struct Spares {
    TensorHold* held[kSpares];
    int n = 0;
    ~Spares() {
      for (int i = 0; i < n; ++i) delete held[i];
    }
  };
};

// Level 2, CPU: what an input that the op writes held at the op's start.
// Its output on the same tensor is recorded as the XOR of the two (format
// v8, `delta_base`): an in-place update changes few of each value's bits.
// Or (format v9) the input an out-of-place op computes its output from
// element by element (sqrt, a division by a number): the output is
// recorded as its XOR with that computation done again on the input.
struct DeltaBase {
  const c10::TensorImpl* impl = nullptr;  // compared only: the op holds the tensor
  uint64_t content = 0;
  uint8_t depth = 0;                      // its own content's delta chain
  size_t tensor = SIZE_MAX;  // its bytes are this input's (defined by this record)
  DataBuffer bytes;          // else a copy (it was a reference to an earlier record's)
  // An out-of-place op's input (impl null), read where it lies when the
  // output is captured: the op does not write it.
  const char* input = nullptr;
  size_t input_bytes = 0;
};

// Level 2, CPU: a tensor's bytes, held apart from its format::Tensor
// (`data_apart`) in acc's own memory until the writer has compressed them.
struct TensorBytes {
  size_t tensor = 0;  // index in tensors
  DataBuffer bytes;
};

struct CapturedOp : format::OpRecord {
  CapturedOp() = default;
  CapturedOp(CapturedOp&&) = default;
  CapturedOp& operator=(CapturedOp&&) = default;
  // Out of line (emit_record.cpp): inlined, destroying a record's dozen
  // vectors, strings and tensors was a copy of that code in each function
  // that may drop one (8 KB of the library in all), among the per-op path's
  // instructions, which share the instruction cache with torch's
  // dispatcher (docs/guide/performance.md, "Per op").
  ~CapturedOp();

  std::vector<DeviceValues> device_values;
  std::vector<c10::Device> unmarked;  // devices with copies that no event follows yet
  std::vector<c10::Event> events;     // one per device and capture batch
  // Contents this record defines: referable once it is queued, to its own
  // thread once it joins the thread's batch (record_batch.h).
  std::vector<ContentStore::Pending> contents;
  std::unique_ptr<TensorHold> hold;  // ACC_WATCH and ACC_REFERENCE only
  std::vector<DeltaBase> delta_bases;  // between an op's start and its outputs' capture
  std::vector<TensorBytes> bytes;      // in tensor order
  // The batch of the thread that captured it (record_batch.h), whose
  // contents it may refer to; null: it refers only to queued ones.
  RecordBatch* batch = nullptr;
  // The tensors of the op this record held before it was recycled
  // (record_pool.h), not yet emptied: appendTensor hands them, with their
  // buffers, to this record's next op one by one. Kept in the record, they
  // are moved once between ops, not twice through the pool.
  std::vector<format::Tensor> spare_tensors;

  bool inFlight() const { return !device_values.empty(); }
  // The bytes held apart for tensor i, or null.
  const DataBuffer* bytesOf(size_t i) const {
    for (const TensorBytes& b : bytes) {
      if (b.tensor == i) return &b.bytes;
    }
    return nullptr;
  }
};

// Calls f(format::Tensor&, DataBuffer* apart) for each tensor whose bytes
// follow the record's encoding, in tensor order: apart null where they are
// the tensor's `data`. A tensor marked apart whose bytes the record does
// not hold (copied by copyTensor from a record without them) is made to
// claim none here, where the record is encoded: its encoded size must be
// what follows.
template <typename F>
void forEachData(CapturedOp& r, F&& f) {
  size_t next = 0;
  for (size_t i = 0; i < r.tensors.size(); ++i) {
    format::Tensor& t = r.tensors[i];
    if (!t.has_data || t.content_ref) continue;
    if (!t.data_apart) {
      f(t, static_cast<DataBuffer*>(nullptr));
      continue;
    }
    while (next < r.bytes.size() && r.bytes[next].tensor < i) ++next;
    if (next < r.bytes.size() && r.bytes[next].tensor == i && r.bytes[next].bytes.size() == t.data_size) {
      f(t, &r.bytes[next].bytes);
    } else {
      t.has_data = false;
      t.data_apart = false;
    }
  }
}

// Appends `from`'s tensor i to `to`, with a copy of its bytes where `from`
// holds them apart (where it does not, forEachData drops the claim).
inline void copyTensor(const CapturedOp& from, size_t i, CapturedOp& to) {
  to.tensors.push_back(from.tensors[i]);
  const DataBuffer* b = to.tensors.back().data_apart ? from.bytesOf(i) : nullptr;
  if (b != nullptr) to.bytes.push_back({to.tensors.size() - 1, DataBuffer(b->data(), b->size())});
}

// Where an op ran, for acc's lines: "step 3, module enc.0" ("(top level)"
// outside every module; no module where paths are unknown).
inline std::string placeOf(const format::OpRecord& op) {
  return "step " + std::to_string(op.step) +
         (op.has_module ? ", module " + (op.module.empty() ? std::string("(top level)") : op.module) : std::string());
}

// Calls f(index) for each held tensor of `r` (hold set) that an in-place op
// overwrites: its argument-0 inputs, unless the op replaces them whole
// (op_writes.h). The watch notes their finiteness, ACC_REFERENCE copies them.
template <typename F>
void forEachOverwrittenInput(const CapturedOp& r, F&& f) {
  if (!r.hold || !writesInPlace(r.op) || replacesArgument0(r.op)) return;
  for (size_t i = 0; i < r.tensors.size() && i < r.hold->tensors.size(); ++i) {
    const format::Tensor& t = r.tensors[i];
    if (t.role == format::Role::Input && t.position == 0 && !t.uninitialized) f(i);
  }
}

}  // namespace acc::recorder
