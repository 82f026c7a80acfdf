// The background thread that turns queued records into zstd frames on
// disk (level 2's data frames with helpers of its own: ACC_DATA_THREADS,
// format/data_frame_pipeline.h; and its file written through O_DIRECT,
// format/direct_file.h). Op threads only encode and enqueue; all I/O
// happens here.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "env/config.h"
#include "format/frame.h"
#include "format/record_sink.h"
#include "recorder/capture/device/in_flight.h"
#include "recorder/write/ring_buffer.h"

namespace acc::recorder {

// Op records are counted; other records (stacks) only when they are lost.
struct WriterCounts {
  uint64_t records_written = 0;
  uint64_t records_dropped = 0;  // queue full in drop mode, or after stop
  uint64_t records_lost = 0;     // encoded but not written (I/O error)
  uint64_t frames = 0;
  uint64_t bytes_written = 0;
  uint64_t others_lost = 0;  // stack records dropped or not written
  uint64_t in_flight_waits = 0;  // in-flight records the writer had to wait for
  bool direct_io = false;  // level 2: records.acc written through O_DIRECT (format/direct_file.h)
};

class Writer {
 public:
  // Opens (truncates) `path` and writes the file header; throws
  // std::runtime_error with the path and reason when it cannot. `tick`, if
  // set, runs on the writer thread about once a second (manifest refresh).
  Writer(const std::string& path, const env::Config& config, std::function<void()> tick = {});
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Hands one encoded record to the writer: format::encode() output, for an
  // op record followed by its format::appendData() bytes. Never throws;
  // returns false when the record was dropped (and counted).
  bool submit(std::string record);
  // An op record whose device values are still being copied: the writer
  // encodes it when they have arrived, in queue order. Same contract.
  bool submit(std::unique_ptr<InFlightRecord> record);
  // An empty item to fill (bytes or in_flight) and submit(): one the writer
  // has written and handed back when there is one, with its buffer. Then
  // the writer never frees what an op thread allocated, which glibc does
  // under the op thread's arena lock, contending with the op's own
  // allocations (a futex call per op on a busy level-1 recording).
  std::unique_ptr<QueuedRecord> blank();
  bool submit(std::unique_ptr<QueuedRecord> item);

  // Drains the queue, writes the last frame and joins the thread.
  void stop();

  WriterCounts counts() const;
  std::string ioError() const;

 private:
  bool push(std::unique_ptr<QueuedRecord> item);
  void recycle(std::unique_ptr<QueuedRecord> item);
  void run();
  bool settle(QueuedRecord& item, bool stopping);
  void flush();
  void publishCounts();

  env::Config config_;
  RingBuffer<QueuedRecord> queue_;
  // Written items waiting for blank(), each with a buffer of at most
  // kPoolRecordBytes (16 MiB in all): the writer pushes, op threads pop.
  RingBuffer<QueuedRecord> pool_;
  // Level 2: what the blocks of tensor bytes, in use and kept, may take
  // (data_buffer.h): the queue's budget, or 64 MiB where that is less (with
  // 16 MiB an optimizer op's few tensors of 10 MB found no kept block, had
  // their pages faulted in anew and waited for the queue to empty:
  // resnet18 + AdamW at level 2 ran a fifth slower than in the heap).
  const uint64_t data_blocks_;
  int fd_ = -1;
  std::thread thread_;
  // Read or written by op threads on every record: a cache line of their
  // own, apart from the writer thread's state below.
  alignas(64) std::atomic<bool> stopping_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<int> submitting_{0};  // submit() calls in progress
  alignas(64) const std::function<void()> tick_;

  // Writer-thread state.
  std::unique_ptr<QueuedRecord> waiting_;  // in flight, its values not arrived yet
  std::chrono::steady_clock::time_point waiting_since_;  // when waiting_ was last nudged
  std::chrono::steady_clock::time_point stop_seen_;  // when the thread first saw stopping_
  std::unique_ptr<format::RecordSink> sink_;
  std::vector<std::string_view> pieces_;  // the item's data buffers, for sink_
  uint64_t header_bytes_ = 0;

  std::atomic<uint64_t> written_{0}, dropped_{0}, lost_{0}, frames_{0}, bytes_{0}, others_lost_{0},
      in_flight_waits_{0};
  std::atomic<bool> direct_io_{false};
  mutable std::mutex error_mutex_;
  std::string io_error_;
};

}  // namespace acc::recorder
