// Bounded lock-free multi-producer multi-consumer queue (Dmitry Vyukov's
// design): op threads to the writer thread, and back for recycled items.
// Nobody takes a lock; when the queue or its byte budget is full, the caller
// chooses to wait or to drop.
// An item's weight against the budget is queuedBytes(item), found by ADL.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>

namespace acc::recorder {

inline uint64_t queuedBytes(const std::string& item) { return item.size(); }

template <typename Item = std::string>
class RingBuffer {
 public:
  // `slots` is rounded up to a power of two; `byte_budget` bounds the record
  // bytes queued and not yet taken by the writer.
  RingBuffer(size_t slots, uint64_t byte_budget) : budget_(byte_budget) {
    size_t n = 2;
    while (n < slots) n <<= 1;
    slots_ = std::make_unique<Slot[]>(n);
    mask_ = n - 1;
    for (size_t i = 0; i < n; ++i) {
      slots_[i].sequence.store(i, std::memory_order_relaxed);
      slots_[i].item = nullptr;
    }
  }
  ~RingBuffer() {
    while (tryPop()) {
    }
  }
  RingBuffer(const RingBuffer&) = delete;
  RingBuffer& operator=(const RingBuffer&) = delete;

  // Takes ownership on success; on failure (full) `item` is left untouched.
  bool tryPush(std::unique_ptr<Item>& item) {
    const uint64_t size = queuedBytes(*item);
    // The budget is advisory under contention: a record that fits when
    // checked may overshoot by at most one record per producer thread.
    const uint64_t queued = bytes_.load(std::memory_order_relaxed);
    if (queued != 0 && queued + size > budget_) return false;

    size_t pos = head_.load(std::memory_order_relaxed);
    for (;;) {
      Slot& slot = slots_[pos & mask_];
      const size_t seq = slot.sequence.load(std::memory_order_acquire);
      const auto diff = static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos);
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

  // Safe from several consumer threads (the writer's pool of recycled items
  // is popped by every op thread); one compare-and-swap per item.
  std::unique_ptr<Item> tryPop() {
    size_t pos = tail_.load(std::memory_order_relaxed);
    for (;;) {
      Slot& slot = slots_[pos & mask_];
      const size_t seq = slot.sequence.load(std::memory_order_acquire);
      const auto diff = static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos + 1);
      if (diff == 0) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          std::unique_ptr<Item> item(slot.item);
          slot.item = nullptr;
          slot.sequence.store(pos + mask_ + 1, std::memory_order_release);
          bytes_.fetch_sub(queuedBytes(*item), std::memory_order_relaxed);
          return item;
        }
      } else if (diff < 0) {
        return nullptr;  // empty
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
  }

  uint64_t bytesQueued() const { return bytes_.load(std::memory_order_relaxed); }
  uint64_t byteBudget() const { return budget_; }

 private:
  struct Slot {
    std::atomic<size_t> sequence;
    Item* item;
  };
  static constexpr size_t kLine = 64;

  std::unique_ptr<Slot[]> slots_;
  size_t mask_;
  uint64_t budget_;
  alignas(kLine) std::atomic<size_t> head_{0};  // next slot to fill
  alignas(kLine) std::atomic<size_t> tail_{0};  // next slot to take
  alignas(kLine) std::atomic<uint64_t> bytes_{0};
};

}  // namespace acc::recorder
