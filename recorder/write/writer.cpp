#include "recorder/write/writer.h"

#include "recorder/session/termination.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "format/bytes.h"
#include "format/record_sink.h"
#include "format/record.h"

namespace acc::recorder {
namespace {

constexpr size_t kQueueSlots = 1 << 16;
constexpr uint64_t kLeastDataBufferMb = 64;
// Written items kept for op threads to fill again: as many as a fast op
// loop (a few hundred thousand ops a second) queues while the writer
// sleeps its millisecond or compresses a frame, so that the steady state
// allocates none. At most 16 MiB of buffers in all.
constexpr size_t kPoolItems = 2048;
constexpr size_t kPoolRecordBytes = 8 << 10;
constexpr auto kFlushInterval = std::chrono::milliseconds(100);
constexpr auto kTickInterval = std::chrono::seconds(1);
// How long stop() waits for a device's values before counting them lost.
constexpr auto kStopWait = std::chrono::seconds(10);
// How long the writer waits for a record before it starts what the record
// still waits for (a batch of device statistics: stats_batch.h). Long
// enough for a training step's ops to share one batch.
constexpr auto kNudgeAfter = std::chrono::milliseconds(200);
// How often the writer looks at a record in flight: from kShortestPoll,
// twice as long after each look that finds it still waiting, up to
// kLongestPoll; it keeps up all the same, for every look settles what has
// arrived (the queue budget bounds what waits).
constexpr auto kShortestPoll = std::chrono::microseconds(50);
constexpr auto kLongestPoll = std::chrono::microseconds(1600);

}  // namespace

Writer::Writer(const std::string& path, const env::Config& config, std::function<void()> tick)
    : config_(config),
      queue_(kQueueSlots, config.buffer_mb << 20),
      pool_(kPoolItems, std::numeric_limits<uint64_t>::max()),
      data_blocks_(std::max<uint64_t>(config.buffer_mb, kLeastDataBufferMb) << 20),
      tick_(std::move(tick)) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(path + ": " + std::strerror(errno));
  std::string header = format::fileHeader();
  if (int err = format::writeAll(fd_, header.data(), header.size())) {
    ::close(fd_);
    throw std::runtime_error(path + ": " + std::strerror(err));
  }
  header_bytes_ = header.size();
  bytes_ = header.size();
  setDataBufferCache(data_blocks_);
  thread_ = std::thread([this] { run(); });
}

Writer::~Writer() { stop(); }

bool Writer::submit(std::string record) {
  auto item = blank();
  item->bytes = std::move(record);
  return push(std::move(item));
}

bool Writer::submit(std::unique_ptr<InFlightRecord> record) {
  auto item = blank();
  item->in_flight = std::move(record);
  return push(std::move(item));
}

bool Writer::submit(std::unique_ptr<QueuedRecord> item) { return push(std::move(item)); }

std::unique_ptr<QueuedRecord> Writer::blank() {
  std::unique_ptr<QueuedRecord> item = pool_.tryPop();
  return item ? std::move(item) : std::make_unique<QueuedRecord>();
}

void Writer::recycle(std::unique_ptr<QueuedRecord> item) {
  item->in_flight.reset();
  item->data.clear();  // their blocks go back for the next ones
  item->records = 0;
  if (item->bytes.capacity() > kPoolRecordBytes) return;  // large records (level 2) are freed here
  item->bytes.clear();
  pool_.tryPush(item);  // a full pool frees it here
}

bool Writer::push(std::unique_ptr<QueuedRecord> item) {
  // stop() waits for submitters to leave before its last drain, so a record
  // is either written or counted as dropped, never lost in between.
  // Sequentially consistent: stop() stores stopping_ then reads submitting_,
  // this reads them the other way round (a store-load pair).
  submitting_.fetch_add(1);
  bool queued = false;
  while (!stopping_.load()) {
    // Level 2: the blocks of tensor bytes in use, queued or being captured
    // on any thread, stay within half their bound (data_blocks_) while the
    // writer, emptying the queue, has any to give back (a record larger
    // passes alone); the other half keeps blocks the writer gave back for
    // the next captures (data_buffer.h), whose pages are otherwise faulted
    // in anew. Measured on resnet18 + AdamW, 8 steps: with three quarters,
    // 1.2 GB of new blocks and 0.51 M page faults; with half, 0.35 GB and
    // 0.32 M (0.37 M before level 2's bytes left the program's heap).
    const bool over = !item->data.empty() && dataBuffersInUse() > data_blocks_ / 2 && queue_.bytesQueued() != 0;
    if (!over && queue_.tryPush(item)) {
      queued = true;
      break;
    }
    if (config_.on_full == env::OnFull::Drop) break;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  submitting_.fetch_sub(1, std::memory_order_acq_rel);
  // A record that was not queued is still here: only then is it read to
  // tell op records (counted as dropped) from stack records.
  if (!queued && item->records != 0) {
    dropped_.fetch_add(item->records, std::memory_order_relaxed);
  } else if (!queued) {
    const bool op = item->in_flight || format::isOpRecord(item->bytes);
    (op ? dropped_ : others_lost_).fetch_add(1, std::memory_order_relaxed);
  }
  return queued;
}

// An in-flight record becomes bytes once its values have arrived; until
// then it waits (and the records behind it with it, keeping their order).
// Once stopping, the device gets kStopWait in all, then what is still in
// flight is counted as lost. False: not yet.
bool Writer::settle(QueuedRecord& item, bool stopping) {
  if (!item.in_flight) return true;
  bool lost = false;
  try {
    if (item.in_flight->arrived()) {
      item.bytes.clear();
      item.in_flight->encodeInto(item.bytes);
    } else if (stopping && std::chrono::steady_clock::now() - stop_seen_ > kStopWait) {
      lost = true;
    } else {
      return false;
    }
  } catch (...) {
    lost = true;  // the device failed or is gone (process exit)
  }
  item.in_flight.reset();
  if (lost) {
    lost_.fetch_add(1, std::memory_order_relaxed);
    item.bytes.clear();
  }
  return true;
}

void Writer::run() {
  blockTerminationSignals();
  sink_ = std::make_unique<format::RecordSink>(fd_, config_.zstd_level, config_.data_zstd_level,
                                               config_.frame_kb << 10, config_.data_threads);
  // Level 2's gigabytes bypass the page cache (format/direct_file.h).
  if (config_.level >= 2) {
    sink_->writeDirect(format::fileHeader());
    publishCounts();
  }
  const size_t frame_bytes = config_.frame_kb << 10;
  auto last_flush = std::chrono::steady_clock::now();
  auto last_tick = last_flush;
  std::chrono::microseconds poll = kShortestPoll;
  for (;;) {
    bool stopping = stopping_.load(std::memory_order_acquire);
    if (stopping && stop_seen_ == std::chrono::steady_clock::time_point{}) {
      stop_seen_ = std::chrono::steady_clock::now();
    }
    const bool fresh = !waiting_;
    std::unique_ptr<QueuedRecord> item = fresh ? queue_.tryPop() : std::move(waiting_);
    if (item && !settle(*item, stopping)) {
      const auto now = std::chrono::steady_clock::now();
      if (fresh) {
        in_flight_waits_.fetch_add(1, std::memory_order_relaxed);
        waiting_since_ = now;
      } else if (stopping || now - waiting_since_ >= kNudgeAfter) {
        try {
          item->in_flight->nudge();
        } catch (...) {
          // settle() will count it lost if its values never come
        }
        waiting_since_ = now;
      }
      waiting_ = std::move(item);
    }
    const bool added = item != nullptr;
    if (item && item->records != 0) {
      sink_->addRecords(item->bytes, item->records);
    } else if (item && !item->bytes.empty()) {
      pieces_.clear();
      for (const DataBuffer& d : item->data) pieces_.push_back(d.view());
      sink_->add(item->bytes, pieces_);
      publishCounts();  // whole data frames may have been written
    }
    if (item) {
      recycle(std::move(item));
      poll = kShortestPoll;
    }
    auto now = std::chrono::steady_clock::now();
    const size_t pending = sink_->pending();
    bool due = pending != 0 && now - last_flush >= kFlushInterval;
    if (pending >= frame_bytes || due || (!added && !waiting_ && stopping)) {
      if (pending != 0) flush();
      last_flush = now;
    }
    if (tick_ && now - last_tick >= kTickInterval) {
      tick_();
      last_tick = now;
    }
    if (waiting_) {
      // Polled less often the longer it waits (a device runs milliseconds
      // behind the host): each wake-up takes a core from the program.
      std::this_thread::sleep_for(poll);
      poll = std::min(poll * 2, kLongestPoll);
    } else if (!added) {
      if (stopping) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

void Writer::flush() {
  const format::RecordSink::Flushed f = sink_->flush();
  if (f.ok) {
    written_ += f.records;
  } else {
    lost_ += f.records;
    others_lost_ += f.others;
  }
  publishCounts();
}

// What other threads read of the sink's state.
void Writer::publishCounts() {
  frames_.store(sink_->frames(), std::memory_order_relaxed);
  direct_io_.store(sink_->directIo(), std::memory_order_relaxed);
  bytes_.store(header_bytes_ + sink_->bytes(), std::memory_order_relaxed);
  if (!sink_->error().empty()) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (io_error_.empty()) io_error_ = sink_->error();
  }
}

void Writer::stop() {
  if (stopped_.exchange(true)) return;
  stopping_.store(true);
  // Submitters that saw the writer running finish their push first; the
  // writer thread drains the queue after that.
  while (submitting_.load() != 0) std::this_thread::yield();
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

WriterCounts Writer::counts() const {
  WriterCounts c;
  c.records_written = written_.load();
  c.records_dropped = dropped_.load();
  c.records_lost = lost_.load();
  c.frames = frames_.load();
  c.bytes_written = bytes_.load();
  c.others_lost = others_lost_.load();
  c.in_flight_waits = in_flight_waits_.load();
  c.direct_io = direct_io_.load();
  return c;
}

std::string Writer::ioError() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return io_error_;
}

}  // namespace acc::recorder
