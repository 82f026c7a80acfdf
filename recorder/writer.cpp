#include "recorder/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "format/bytes.h"
#include "format/record.h"

namespace acc::recorder {
namespace {

constexpr size_t kQueueSlots = 1 << 16;
constexpr size_t kPoolItems = 256;
constexpr size_t kPoolRecordBytes = 64 << 10;
constexpr auto kFlushInterval = std::chrono::milliseconds(100);
constexpr auto kTickInterval = std::chrono::seconds(1);
// How long stop() waits for a device's values before counting them lost.
constexpr auto kStopWait = std::chrono::seconds(10);

// Writes all of `data`; returns 0 or the errno that stopped it.
int writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

bool isOpRecord(const std::string& record) {
  format::RecordCursor cursor(record);
  format::RecordKind kind;
  std::string_view body;
  try {
    return cursor.next(kind, body) && kind == format::RecordKind::Op;
  } catch (const format::FormatError&) {
    return false;
  }
}

}  // namespace

Writer::Writer(const std::string& path, const env::Config& config, std::function<void()> tick)
    : config_(config),
      queue_(kQueueSlots, config.buffer_mb << 20),
      pool_(kPoolItems, std::numeric_limits<uint64_t>::max()),
      tick_(std::move(tick)) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(path + ": " + std::strerror(errno));
  std::string header = format::fileHeader();
  if (int err = writeAll(fd_, header.data(), header.size())) {
    ::close(fd_);
    throw std::runtime_error(path + ": " + std::strerror(err));
  }
  bytes_ = header.size();
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
  if (item->bytes.capacity() > kPoolRecordBytes) return;  // large records are rare: freed here
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
    if (queue_.tryPush(item)) {
      queued = true;
      break;
    }
    if (config_.on_full == env::OnFull::Drop) break;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  submitting_.fetch_sub(1, std::memory_order_acq_rel);
  // A record that was not queued is still here: only then is it read to
  // tell op records (counted as dropped) from stack records.
  if (!queued) {
    const bool op = item->in_flight || isOpRecord(item->bytes);
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
      item.bytes = item.in_flight->encode();
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
  encoder_ = std::make_unique<format::FrameEncoder>(config_.zstd_level);
  data_encoder_ = std::make_unique<format::FrameEncoder>(config_.data_zstd_level);
  frame_bytes_ = config_.frame_kb << 10;
  auto last_flush = std::chrono::steady_clock::now();
  auto last_tick = last_flush;
  for (;;) {
    bool stopping = stopping_.load(std::memory_order_acquire);
    if (stopping && stop_seen_ == std::chrono::steady_clock::time_point{}) {
      stop_seen_ = std::chrono::steady_clock::now();
    }
    const bool fresh = !waiting_;
    std::unique_ptr<QueuedRecord> item = fresh ? queue_.tryPop() : std::move(waiting_);
    if (item && !settle(*item, stopping)) {
      if (fresh) in_flight_waits_.fetch_add(1, std::memory_order_relaxed);
      waiting_ = std::move(item);
    }
    const bool added = item != nullptr;
    if (item && !item->bytes.empty()) add(item->bytes);
    if (item) recycle(std::move(item));
    auto now = std::chrono::steady_clock::now();
    bool due = !payload_.empty() && now - last_flush >= kFlushInterval;
    if (payload_.size() >= frame_bytes_ || due || (!added && !waiting_ && stopping)) {
      if (!payload_.empty()) flush();
      last_flush = now;
    }
    if (tick_ && now - last_tick >= kTickInterval) {
      tick_();
      last_tick = now;
    }
    if (waiting_) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    } else if (!added) {
      if (stopping) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

// Records go to the record payload; an op's tensor bytes go to the data
// stream, and the record is wrapped with the offset they start at.
void Writer::add(const std::string& item) {
  const bool op = isOpRecord(item);
  ++(op ? payload_records_ : payload_others_);
  std::string_view record = item, data;
  if (op) {
    try {
      format::splitRecord(item, record, data);
    } catch (const format::FormatError&) {
      record = item;  // isOpRecord() read its length: cannot happen
      data = {};
    }
  }
  if (data.empty()) {
    payload_.append(record);
    return;
  }
  format::wrapWithDataOffset(record, data_offset_ + data_payload_.size(), payload_);
  addData(data);
}

void Writer::addData(std::string_view data) {
  while (!data.empty()) {
    if (data_payload_.empty() && data.size() >= frame_bytes_) {
      flushData(data.substr(0, frame_bytes_));  // whole frames straight from the item
      data.remove_prefix(frame_bytes_);
      continue;
    }
    const size_t n = std::min(frame_bytes_ - data_payload_.size(), data.size());
    data_payload_.append(data.data(), n);
    data.remove_prefix(n);
    if (data_payload_.size() >= frame_bytes_) {
      flushData(data_payload_);
      data_payload_.clear();
    }
  }
}

void Writer::flushData(std::string_view data) {
  try {
    data_encoder_->encodeData(data, data_offset_, frame_);
  } catch (const std::exception& e) {
    frame_.clear();
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (io_error_.empty()) io_error_ = e.what();
  }
  data_offset_ += data.size();
  writeFrame();
}

// Writes frame_; false (and io_error_ set) when it or an earlier one failed.
bool Writer::writeFrame() {
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!io_error_.empty() || frame_.empty()) return false;
  }
  if (int err = writeAll(fd_, frame_.data(), frame_.size())) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    io_error_ = std::string("write failed: ") + std::strerror(err);
    return false;
  }
  frames_ += 1;
  bytes_ += frame_.size();
  return true;
}

// The data a record frame refers to is written before it, so a crash never
// leaves a record whose bytes are not on disk.
void Writer::flush() {
  if (!data_payload_.empty()) {
    flushData(data_payload_);
    data_payload_.clear();
  }
  try {
    encoder_->encode(payload_, frame_);
  } catch (const std::exception& e) {
    frame_.clear();
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (io_error_.empty()) io_error_ = e.what();
  }
  if (writeFrame()) {
    written_ += payload_records_;
  } else {
    lost_ += payload_records_;
    others_lost_ += payload_others_;
  }
  payload_.clear();
  payload_records_ = 0;
  payload_others_ = 0;
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
  return c;
}

std::string Writer::ioError() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return io_error_;
}

}  // namespace acc::recorder
