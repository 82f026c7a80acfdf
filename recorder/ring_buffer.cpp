#include "recorder/ring_buffer.h"

namespace acc::recorder {

RingBuffer::RingBuffer(size_t slots, uint64_t byte_budget) : budget_(byte_budget) {
  size_t n = 2;
  while (n < slots) n <<= 1;
  slots_ = std::make_unique<Slot[]>(n);
  mask_ = n - 1;
  for (size_t i = 0; i < n; ++i) {
    slots_[i].sequence.store(i, std::memory_order_relaxed);
    slots_[i].item = nullptr;
  }
}

RingBuffer::~RingBuffer() {
  while (tryPop()) {
  }
}

bool RingBuffer::tryPush(std::unique_ptr<std::string>& item) {
  uint64_t size = item->size();
  // The budget is advisory under contention: a record that fits when checked
  // may overshoot by at most one record per producer thread.
  uint64_t queued = bytes_.load(std::memory_order_relaxed);
  if (queued != 0 && queued + size > budget_) return false;

  size_t pos = head_.load(std::memory_order_relaxed);
  for (;;) {
    Slot& slot = slots_[pos & mask_];
    size_t seq = slot.sequence.load(std::memory_order_acquire);
    auto diff = static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos);
    if (diff == 0) {
      if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
        bytes_.fetch_add(size, std::memory_order_relaxed);
        slot.item = item.release();
        slot.sequence.store(pos + 1, std::memory_order_release);
        return true;
      }
    } else if (diff < 0) {
      return false;  // full
    } else {
      pos = head_.load(std::memory_order_relaxed);
    }
  }
}

std::unique_ptr<std::string> RingBuffer::tryPop() {
  size_t pos = tail_.load(std::memory_order_relaxed);
  Slot& slot = slots_[pos & mask_];
  size_t seq = slot.sequence.load(std::memory_order_acquire);
  if (static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos + 1) < 0) return nullptr;
  // Single consumer: no CAS needed on the tail.
  std::unique_ptr<std::string> item(slot.item);
  slot.item = nullptr;
  tail_.store(pos + 1, std::memory_order_relaxed);
  slot.sequence.store(pos + mask_ + 1, std::memory_order_release);
  bytes_.fetch_sub(item->size(), std::memory_order_relaxed);
  return item;
}

}  // namespace acc::recorder
