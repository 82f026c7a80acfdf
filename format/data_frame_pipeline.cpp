#include "format/data_frame_pipeline.h"

#include <exception>

namespace acc::format {

// Two slots more than helpers: one the sink fills while every helper
// compresses, and one it compresses itself when they are all taken.
DataFramePipeline::DataFramePipeline(int zstd_level, int helpers) : slots_(static_cast<size_t>(helpers) + 2) {
  for (int i = 0; i < helpers; ++i) encoders_.push_back(std::make_unique<FrameEncoder>(zstd_level));
  try {
    for (int i = 0; i < helpers; ++i) helpers_.emplace_back([this, i] { helperLoop(*encoders_[i]); });
  } catch (...) {
    stop();  // the ones started (no destructor runs after a throwing constructor)
    throw;
  }
}

DataFramePipeline::~DataFramePipeline() { stop(); }

void DataFramePipeline::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  for (std::thread& t : helpers_) t.join();
  helpers_.clear();
}

bool DataFramePipeline::full() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return count_ == slots_.size();
}

bool DataFramePipeline::empty() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return count_ == 0;
}

void DataFramePipeline::submit(std::string_view payload, uint64_t stream_offset) {
  size_t index;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    index = (head_ + count_) % slots_.size();  // Free: only this thread frees and fills
  }
  Slot& slot = slots_[index];
  slot.shuffled.resize(payload.size());
  byteShuffle4(payload.data(), payload.size(), slot.shuffled.data());
  slot.stream_offset = stream_offset;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slot.state = State::Queued;
    ++count_;
  }
  queued_.notify_one();
}

// The oldest queued slot, marked Running; false when none is queued. With
// mutex_ held.
bool DataFramePipeline::claimQueued(size_t& index) {
  for (size_t i = 0; i < count_; ++i) {
    const size_t at = (head_ + i) % slots_.size();
    if (slots_[at].state == State::Queued) {
      slots_[at].state = State::Running;
      index = at;
      return true;
    }
  }
  return false;
}

void DataFramePipeline::compress(Slot& slot, FrameEncoder& encoder) {
  slot.error.clear();
  try {
    encoder.encodeShuffledData(slot.shuffled, slot.stream_offset, slot.frame);
  } catch (const std::exception& e) {
    slot.frame.clear();
    slot.error = e.what();
  }
}

void DataFramePipeline::helperLoop(FrameEncoder& encoder) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    size_t index;
    queued_.wait(lock, [&] { return stopping_ || claimQueued(index); });
    if (stopping_) return;
    lock.unlock();
    compress(slots_[index], encoder);
    lock.lock();
    slots_[index].state = State::Done;
    finished_.notify_all();
  }
}

void DataFramePipeline::helpOrWait(FrameEncoder& self) {
  std::unique_lock<std::mutex> lock(mutex_);
  size_t index;
  if (claimQueued(index)) {
    lock.unlock();
    compress(slots_[index], self);
    lock.lock();
    slots_[index].state = State::Done;
    return;
  }
  if (count_ == 0) return;
  finished_.wait(lock, [&] { return slots_[head_].state == State::Done; });
}

void DataFramePipeline::takeFinished(
    const std::function<void(const std::string& frame, const std::string& error)>& write) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (count_ != 0 && slots_[head_].state == State::Done) {
    Slot& slot = slots_[head_];
    lock.unlock();  // a Done slot is the sink's alone until freed
    write(slot.frame, slot.error);
    lock.lock();
    slot.state = State::Free;
    head_ = (head_ + 1) % slots_.size();
    --count_;
  }
}

}  // namespace acc::format
