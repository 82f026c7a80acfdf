#include "recorder/observe/emit_record.h"

#include <utility>
#include <vector>

#include "recorder/capture/device/device_capture.h"
#include "recorder/write/record_pool.h"

namespace acc::recorder {

CapturedOp::~CapturedOp() = default;

void emitRecord(Session& s, std::unique_ptr<CapturedOp> record) {
  s.counts().recorded.fetch_add(1, std::memory_order_relaxed);
  record->hold.reset();
  RecordBatches& batches = s.batches();
  if (batches.take(record)) return;
  // Alone, after the records of its thread and of the one that captured it.
  batches.handOverBefore(*record);
  // Later records may refer to its contents only once it is in the queue,
  // ahead of them (a dropped record defines nothing).
  if (record->inFlight()) {
    // Device values are still being copied: the writer completes it. Its
    // contents are published from this thread's buffer, swapped with the
    // record's (both keep their capacity; publish() empties it).
    std::vector<ContentStore::Pending> alone;  // the thread's pool is gone (exit)
    std::vector<ContentStore::Pending>* buffer = record_pool::contentsBuffer();
    std::vector<ContentStore::Pending>& contents = buffer != nullptr ? *buffer : alone;
    contents.swap(record->contents);
    if (s.emit(inFlight(std::move(record))) && s.contents() != nullptr) s.contents()->publish(contents);
    contents.clear();
    return;
  }
  std::unique_ptr<QueuedRecord> item = s.blankRecord();
  // Its tensor bytes go to the writer as they are, in their buffers: a copy
  // into the item would double what level 2 holds and copies.
  forEachData(*record, [&](format::Tensor& t, DataBuffer* apart) {
    item->data.push_back(apart != nullptr ? std::move(*apart) : DataBuffer(t.data.data(), t.data.size()));
  });
  format::encode(*record, item->bytes);
  if (s.emit(std::move(item)) && s.contents() != nullptr) s.contents()->publish(record->contents);
  record_pool::recycle(std::move(record));
}

}  // namespace acc::recorder
