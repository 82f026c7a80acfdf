// A record whose tensor values are still on their way from a device (copies
// queued behind the op's kernels). The op thread hands it to the writer at
// once; the writer thread encodes it when the values have arrived, so no op
// thread ever waits for a device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "recorder/write/data_buffer.h"

namespace acc::recorder {

class InFlightRecord {
 public:
  virtual ~InFlightRecord() = default;
  // Whether every value has arrived; never blocks. May throw (a device
  // error), and then the record is counted as lost.
  virtual bool arrived() = 0;
  // After arrived(): the record's bytes, format::encode() then appendData(),
  // appended to `out` (the queue item's own buffer, kept from item to item).
  virtual void encodeInto(std::string& out) = 0;
  // Host memory it holds (staging buffers), counted against the queue budget.
  virtual uint64_t heldBytes() const = 0;
  // The writer has waited a while for it: start what it still waits for
  // (a batch of device statistics not yet launched).
  virtual void nudge() {}
};

// What the writer's queue holds: encoded bytes, or a record in flight.
struct QueuedRecord {
  std::string bytes;
  // Level 2 on the CPU: the tensor bytes that follow `bytes`, in tensor
  // order, each in the buffer it was captured into (data_buffer.h).
  std::vector<DataBuffer> data;
  std::unique_ptr<InFlightRecord> in_flight;
  // A thread's batch (record_batch.h): `bytes` holds this many op records
  // without tensor bytes, one after another. 0: one record of any kind.
  uint32_t records = 0;
};

inline uint64_t queuedBytes(const QueuedRecord& r) {
  uint64_t n = r.bytes.size() + (r.in_flight ? r.in_flight->heldBytes() : 0);
  for (const DataBuffer& d : r.data) n += d.size();
  return n;
}

}  // namespace acc::recorder
