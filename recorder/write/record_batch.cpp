#include "recorder/write/record_batch.h"

#include <unistd.h>

#include <utility>

#include "format/record.h"
#include "recorder/write/record_pool.h"

namespace acc::recorder {
namespace {

// This thread's batch: a plain pointer, read once per record without the
// initialisation check a thread_local object costs at every access; null
// before its first record and once its exit began.
thread_local RecordBatch* t_batch = nullptr;
thread_local bool t_exiting = false;

// Hands the thread's batch over at its exit, when the thread's other
// thread_locals may be gone already: the hand-over encodes in the batch's
// own buffer, and record_pool frees what comes back once the thread's pool
// is gone.
struct Owner {
  RecordBatches* batches = nullptr;
  RecordBatch* batch = nullptr;
  ~Owner();
};

}  // namespace

RecordBatch* RecordBatches::mine() {
  RecordBatch* b = t_batch;
  if (b != nullptr || size_ <= 1 || t_exiting) return b;
  return attach();
}

RecordBatch* RecordBatches::attach() {
  RecordBatch* b = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      b = free_.back();
      free_.pop_back();
    } else {
      all_.push_back(std::make_unique<RecordBatch>());
      b = all_.back().get();
    }
  }
  b->pid_ = ::getpid();
  thread_local Owner owner;
  owner.batches = this;
  owner.batch = b;
  t_batch = b;
  return b;
}

Owner::~Owner() {
  t_batch = nullptr;
  t_exiting = true;
  if (batch != nullptr) batches->detach(batch);
}

void RecordBatches::detach(RecordBatch* b) {
  // A forked child's copy of its parent's batch (and of mu_, perhaps held
  // by a parent thread that is not here): the parent writes it.
  if (b->pid_ != ::getpid()) return;
  handOverLocked(*b);
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(b);
}

bool RecordBatches::take(std::unique_ptr<CapturedOp>& record) {
  if (size_ <= 1 || record->inFlight() || !record->bytes.empty()) return false;
  for (const format::Tensor& t : record->tensors) {
    if (t.has_data && !t.content_ref) return false;
  }
  RecordBatch* b = mine();
  // A record captured on another thread may refer to that thread's batch.
  if (b == nullptr || (record->batch != nullptr && record->batch != b)) return false;
  record->delta_bases.clear();  // the capture's, done
  std::lock_guard<std::mutex> lock(b->mu_);
  if (contents_ != nullptr) contents_->publish(record->contents, &b->clock, b->open_);
  b->records_.push_back(std::move(record));
  b->held_.store(b->records_.size(), std::memory_order_relaxed);
  if (b->records_.size() >= size_) handOver(*b);
  return true;
}

void RecordBatches::handOverBefore(const CapturedOp& record) {
  if (size_ <= 1) return;
  RecordBatch* b = t_batch;
  if (record.batch != nullptr && record.batch != b) handOverLocked(*record.batch);
  if (b != nullptr && b->held_.load(std::memory_order_relaxed) != 0) handOverLocked(*b);
}

void RecordBatches::handOverAll() {
  if (size_ <= 1) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::unique_ptr<RecordBatch>& b : all_) {
    if (b->held_.load(std::memory_order_relaxed) != 0) handOverLocked(*b);
  }
}

void RecordBatches::handOverLocked(RecordBatch& b) {
  std::lock_guard<std::mutex> lock(b.mu_);
  handOver(b);
}

void RecordBatches::handOver(RecordBatch& b) {
  if (b.records_.empty()) return;
  std::unique_ptr<QueuedRecord> item = writer_.blank();
  for (const std::unique_ptr<CapturedOp>& r : b.records_) format::encode(*r, item->bytes, b.scratch_);
  item->records = static_cast<uint32_t>(b.records_.size());
  // Refused only once the writer stops: no record written after it could
  // refer to this batch's contents.
  if (writer_.submit(std::move(item))) b.clock.queued.store(b.open_, std::memory_order_release);
  ++b.open_;
  for (std::unique_ptr<CapturedOp>& r : b.records_) record_pool::recycle(std::move(r));
  b.records_.clear();
  b.held_.store(0, std::memory_order_relaxed);
}

}  // namespace acc::recorder
