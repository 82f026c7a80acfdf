// Data frames compressed on helper threads and handed back in stream order.
// Level 2's tensor bytes are most of what the recorder writes, and one zstd
// on the writer thread was what a level-2 recording waited for (resnet18 +
// AdamW: the writer busy three quarters of the run, zstd three quarters of
// that). RecordSink shuffles each frame's payload into a slot here; helpers
// compress queued slots; the sink writes finished slots from the oldest on,
// so the file's order is the stream's. When every slot is taken, the
// sink's own thread compresses a queued one rather than wait.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "format/frame.h"

namespace acc::format {

class DataFramePipeline {
 public:
  // `helpers` >= 1 threads, started here (they inherit the caller's signal
  // mask: the recorder's writer thread blocks termination signals); throws
  // std::system_error when they cannot be.
  DataFramePipeline(int zstd_level, int helpers);
  ~DataFramePipeline();  // joins the helpers; frames not taken are lost
  DataFramePipeline(const DataFramePipeline&) = delete;
  DataFramePipeline& operator=(const DataFramePipeline&) = delete;

  // Shuffles `payload` (the data stream from `stream_offset` on) into a free
  // slot and queues it; the caller makes room first (full(), helpOrWait()).
  void submit(std::string_view payload, uint64_t stream_offset);
  bool full() const;
  bool empty() const;

  // Compresses a queued slot with `self` on this thread; when none is
  // queued, waits until the oldest is compressed.
  void helpOrWait(FrameEncoder& self);

  // Hands the finished frames at the head, oldest first, to `write` (the
  // frame, or an encoding error with an empty frame) and frees their slots.
  void takeFinished(const std::function<void(const std::string& frame, const std::string& error)>& write);

 private:
  enum class State { Free, Queued, Running, Done };
  struct Slot {
    State state = State::Free;
    std::string shuffled, frame, error;
    uint64_t stream_offset = 0;
  };
  void stop();
  void helperLoop(FrameEncoder& encoder);
  bool claimQueued(size_t& index);
  void compress(Slot& slot, FrameEncoder& encoder);

  mutable std::mutex mutex_;
  std::condition_variable queued_, finished_;
  std::vector<Slot> slots_;
  size_t head_ = 0, count_ = 0;  // oldest slot in use; slots in use
  bool stopping_ = false;
  std::vector<std::unique_ptr<FrameEncoder>> encoders_;  // one per helper
  std::vector<std::thread> helpers_;
};

}  // namespace acc::format
