// Per-thread batches of op records (issue 26, item 3): a thread's host
// records are encoded and handed to the writer ACC_RECORD_BATCH at a time,
// not one by one. The encoder's code then stays in the instruction cache
// across a batch, and the queue's shared cache lines are touched once per
// batch (docs/guide/performance.md, "Per op").
//
// Order. A thread's records keep their order: its batch is handed over
// before anything it hands over alone (a device record in flight, level 2's
// bytes), and before another thread hands over a record it captured (a
// collective's, completed on its backend's thread; the watch's finds).
// Contents (content_store.h) are published as their records join a batch:
// the thread refers to them at once, other threads once the batch is queued
// (ContentStore::Clock), so a definition always comes first in the file.
//
// When. Full; at each step's end, every thread's (the analyzer takes a step
// once it has read 4,096 records of later ones, and a thread that records a
// few ops a step would hold them for many); at the thread's exit; at
// Session::stop. A forked child never hands over its parent's batches: the
// parent writes them.
//
// Off with ACC_REFERENCE (its judge orders and publishes records itself),
// and with ACC_ON_FULL=drop where contents are deduplicated: a dropped batch
// would leave its thread's later records referring to contents defined
// nowhere. With ACC_ON_FULL=wait a batch is refused only once the writer
// stops, after which nothing is written.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "recorder/capture/content_store.h"
#include "recorder/observe/captured_op.h"
#include "recorder/write/writer.h"

namespace acc::recorder {

class RecordBatch {
 public:
  ContentStore::Clock clock;

 private:
  friend class RecordBatches;
  std::mutex mu_;
  std::vector<std::unique_ptr<CapturedOp>> records_;  // mu_
  std::string scratch_;  // the encoder's (mu_): not a thread_local, gone before a thread's last hand-over
  uint64_t open_ = 1;    // mu_: the number of the batch being filled (clock)
  // records_.size(), read without mu_: only its thread adds to it.
  std::atomic<size_t> held_{0};
  int pid_ = 0;  // the process whose thread took it
};

class RecordBatches {
 public:
  // `size`: records per hand-over (1: batches off); `contents` null when
  // nothing is deduplicated.
  RecordBatches(Writer& writer, ContentStore* contents, size_t size)
      : writer_(writer), contents_(contents), size_(size) {}
  RecordBatches(const RecordBatches&) = delete;
  RecordBatches& operator=(const RecordBatches&) = delete;

  // The calling thread's batch, taken at its first record (newRecord);
  // null when batches are off, and while the thread exits.
  RecordBatch* mine();
  // Takes a record of this thread whose values are all on the host and
  // that has no tensor bytes to write into this thread's batch, publishing
  // its contents; false leaves it to the caller, who then hands it over
  // alone after handOverBefore().
  bool take(std::unique_ptr<CapturedOp>& record);
  // Before `record` is handed over alone: the batch it was captured in and
  // the calling thread's are handed over first.
  void handOverBefore(const CapturedOp& record);
  // Every thread's batch (a step's end, Session::stop).
  void handOverAll();
  // At the exit of the thread that took `b`: hands it over and frees it
  // for the next thread.
  void detach(RecordBatch* b);

 private:
  RecordBatch* attach();
  void handOver(RecordBatch& b);     // holds b.mu_
  void handOverLocked(RecordBatch& b);  // takes b.mu_

  Writer& writer_;
  ContentStore* const contents_;
  const size_t size_;
  std::mutex mu_;
  // Never freed (records and the content store point at them); a thread's
  // batch goes back to `free_` at its exit, handed over.
  std::vector<std::unique_ptr<RecordBatch>> all_;  // mu_
  std::vector<RecordBatch*> free_;                 // mu_
};

}  // namespace acc::recorder
