#include "recorder/emit_record.h"

#include <utility>
#include <vector>

#include "recorder/device_capture.h"

namespace acc::recorder {

void emitRecord(Session& s, std::unique_ptr<CapturedOp> record) {
  s.counts().recorded.fetch_add(1, std::memory_order_relaxed);
  std::vector<ContentStore::Pending> contents = std::move(record->contents);
  record->watch.reset();
  bool queued;
  if (record->inFlight()) {
    // Device values are still being copied: the writer completes it.
    queued = s.emit(inFlight(std::move(record)));
  } else {
    std::unique_ptr<QueuedRecord> item = s.blankRecord();
    format::encode(*record, item->bytes);
    format::appendData(*record, item->bytes);
    queued = s.emit(std::move(item));
  }
  // Later records may refer to its contents only once it is in the queue,
  // ahead of them (a dropped record defines nothing).
  if (queued && s.contents() != nullptr) s.contents()->publish(contents);
}

}  // namespace acc::recorder
