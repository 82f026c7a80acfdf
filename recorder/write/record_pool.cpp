#include "recorder/write/record_pool.h"

#include <atomic>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "recorder/per_thread.h"

namespace acc::recorder::record_pool {
namespace {

// Bounds per thread: records nest as deep as ops do (a few), a record has a
// handful of tensors; a tensor's level-2 bytes are kept only when small.
constexpr size_t kMaxRecords = 16;
constexpr size_t kMaxTensors = 512;
constexpr size_t kMaxKeptData = 1024;
constexpr size_t kMaxBlocks = 32;

struct Pool {
  std::vector<std::unique_ptr<CapturedOp>> records;
  std::vector<format::Tensor> tensors;  // with their buffers, emptied when handed out
  size_t block_size = 0;                // the one size blocks are kept for
  std::vector<void*> blocks;
  std::vector<ContentStore::Pending> contents;  // contentsBuffer()

  ~Pool();
};

// Records end on another thread than the one that took them where the
// writer completes them (device records, encoded once their values have
// arrived): that thread's pool fills while the op thread's stays empty and
// allocates. A thread whose pool is full leaves half of it here, and a
// thread whose pool is empty takes from here, a batch per lock.
struct Depot {
  std::mutex mu;
  std::vector<std::unique_ptr<CapturedOp>> records;
  std::vector<format::Tensor> tensors;
  std::atomic<size_t> record_count{0}, tensor_count{0};
};
constexpr size_t kDepotRecords = 512;
constexpr size_t kDepotTensors = 4096;
constexpr size_t kDepotBatch = 16;  // records per lock; tensors 4 times as many

// Never destroyed: threads may hand back records while the process exits.
Depot& depot() {
  static Depot* d = new Depot;
  return *d;
}

Pool::~Pool() {
  for (void* b : blocks) ::operator delete(b);
}

// This thread's pool: null once the thread's exit destroyed it, when what
// is handed back is freed.
Pool* pool() { return PerThread<Pool>::get(); }

// Level 2's bytes, where large, are not kept for a later op.
void releaseLargeData(format::Tensor& t) {
  if (t.data.capacity() > kMaxKeptData) std::string().swap(t.data);
}

// `t` emptied as a default Tensor, field by field: its strings and vectors
// keep their buffers (a new field of format::Tensor must be reset here: the
// size check below fails until it is; it knows the sizes of libstdc++'s
// 64-bit C++11-ABI strings only, and PyPI's torch 2.1 builds with the old
// ABI).
void clearTensor(format::Tensor& t) {
#if defined(__GLIBCXX__) && __SIZEOF_POINTER__ == 8 && _GLIBCXX_USE_CXX11_ABI
  static_assert(sizeof(format::Tensor) == 264, "format::Tensor changed: reset its new fields in clearTensor");
#endif
  t.role = format::Role::Input;
  t.position = 0;
  t.item = 0;
  t.dtype = format::Dtype::Unknown;
  // t.device is kept: captureTensorInto, which fills every tensor
  // appendTensor hands out, sets it, and copies it only when it differs.
  t.shape.clear();
  t.strides.clear();
  t.has_stats = false;
  t.stats = format::Stats();
  t.uninitialized = false;
  t.has_data = false;
  t.data_size = 0;
  t.data_offset = 0;
  t.data_in_stream = false;
  t.data_apart = false;
  releaseLargeData(t);
  t.data.clear();
  t.content = 0;
  t.content_ref = false;
  t.delta_base = 0;
  t.delta_map = format::DeltaMap::None;
  t.delta_scalar = 0;
}

// `r` emptied as a default CapturedOp, keeping its buffers (field by field,
// as clearTensor). Its tensors become its spares as they are (one swap:
// appendTensor empties each as it hands it out); spares its last op left
// unused go to `shells`.
void clearRecord(CapturedOp& r, std::vector<format::Tensor>& shells) {
#if defined(__GLIBCXX__) && __SIZEOF_POINTER__ == 8 && _GLIBCXX_USE_CXX11_ABI
  static_assert(sizeof(format::OpRecord) == 376, "format::OpRecord changed: reset its new fields in clearRecord");
#endif
  for (format::Tensor& t : r.spare_tensors) {
    if (shells.size() >= kMaxTensors) break;
    shells.push_back(std::move(t));
  }
  r.spare_tensors.clear();
  if (r.tensors.size() <= kMaxTensors) {
    for (format::Tensor& t : r.tensors) releaseLargeData(t);
    r.tensors.swap(r.spare_tensors);
  }
  r.tensors.clear();
  r.scalars.clear();
  r.device_values.clear();
  r.unmarked.clear();
  r.events.clear();
  r.contents.clear();
  r.hold.reset();
  r.delta_bases.clear();
  r.bytes.clear();
  r.batch = nullptr;
  for (std::string* s : {&r.name, &r.op, &r.grad_fn, &r.forward_name, &r.overload, &r.module, &r.autocast}) {
    s->clear();
  }
  r.index = 0;
  r.pass = format::Pass::Forward;
  r.step = 0;
  r.op_number = 0;
  r.depth = 0;
  r.thread = 0;
  r.stack_id = 0;
  r.sequence_nr = -1;
  r.start_ns = r.end_ns = 0;
  r.has_overload = false;
  r.has_module = false;
  r.has_autocast = false;
}

// Moves up to `n` elements from the back of `from` to the back of `to`.
template <typename T>
void moveBack(std::vector<T>& from, std::vector<T>& to, size_t n) {
  n = std::min(n, from.size());
  for (size_t i = 0; i < n; ++i) {
    to.push_back(std::move(from.back()));
    from.pop_back();
  }
}

// Half of `from` goes to `to`, as far as `to` stays within `cap`.
template <typename T>
void spillHalf(std::vector<T>& from, std::vector<T>& to, size_t cap) {
  moveBack(from, to, std::min(from.size() / 2, cap - std::min(cap, to.size())));
}

// Half of a full pool goes to the depot, as far as it has room.
void spill(Pool& p) {
  Depot& d = depot();
  std::lock_guard<std::mutex> lock(d.mu);
  spillHalf(p.records, d.records, kDepotRecords);
  spillHalf(p.tensors, d.tensors, kDepotTensors);
  d.record_count.store(d.records.size(), std::memory_order_relaxed);
  d.tensor_count.store(d.tensors.size(), std::memory_order_relaxed);
}

// An empty pool takes a batch from the depot, where it has one.
void refill(Pool& p) {
  Depot& d = depot();
  if (d.record_count.load(std::memory_order_relaxed) == 0 && d.tensor_count.load(std::memory_order_relaxed) == 0) {
    return;
  }
  std::lock_guard<std::mutex> lock(d.mu);
  if (p.records.empty()) moveBack(d.records, p.records, kDepotBatch);
  if (p.tensors.empty()) moveBack(d.tensors, p.tensors, 4 * kDepotBatch);
  d.record_count.store(d.records.size(), std::memory_order_relaxed);
  d.tensor_count.store(d.tensors.size(), std::memory_order_relaxed);
}

}  // namespace

std::unique_ptr<CapturedOp> take() {
  Pool* p = pool();
  if (p != nullptr && p->records.empty()) refill(*p);
  if (p != nullptr && !p->records.empty()) {
    std::unique_ptr<CapturedOp> r = std::move(p->records.back());
    p->records.pop_back();
    return r;
  }
  return std::make_unique<CapturedOp>();
}

void recycle(std::unique_ptr<CapturedOp> record) {
  Pool* p = pool();
  if (!record || p == nullptr) return;
  if (p->records.size() >= kMaxRecords || p->tensors.size() >= kMaxTensors) spill(*p);
  if (p->records.size() >= kMaxRecords) return;
  clearRecord(*record, p->tensors);
  p->records.push_back(std::move(record));
}

std::vector<ContentStore::Pending>* contentsBuffer() {
  Pool* p = pool();
  return p != nullptr ? &p->contents : nullptr;
}

format::Tensor& appendTensor(CapturedOp& record) {
  std::vector<format::Tensor>* from = &record.spare_tensors;
  if (from->empty()) {
    Pool* p = pool();
    if (p == nullptr) return record.tensors.emplace_back();
    if (p->tensors.empty()) refill(*p);
    if (p->tensors.empty()) return record.tensors.emplace_back();
    from = &p->tensors;
  }
  record.tensors.push_back(std::move(from->back()));
  from->pop_back();
  clearTensor(record.tensors.back());
  return record.tensors.back();
}

void* takeBlock(size_t size) {
  Pool* p = pool();
  if (p != nullptr && p->block_size == size && !p->blocks.empty()) {
    void* b = p->blocks.back();
    p->blocks.pop_back();
    return b;
  }
  return ::operator new(size);
}

void giveBlock(void* block, size_t size) {
  if (block == nullptr) return;
  Pool* p = pool();
  if (p != nullptr) {
    if (p->block_size == 0) p->block_size = size;
    if (p->block_size == size && p->blocks.size() < kMaxBlocks) {
      p->blocks.push_back(block);
      return;
    }
  }
  ::operator delete(block);
}

}  // namespace acc::recorder::record_pool
