// Bounded lock-free multi-producer queue (Dmitry Vyukov's design) between op
// threads and the single writer thread. Producers never take a lock; when the
// queue or its byte budget is full, the caller chooses to wait or to drop.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>

namespace acc::recorder {

class RingBuffer {
 public:
  // `slots` is rounded up to a power of two; `byte_budget` bounds the record
  // bytes queued and not yet taken by the writer.
  RingBuffer(size_t slots, uint64_t byte_budget);
  ~RingBuffer();
  RingBuffer(const RingBuffer&) = delete;
  RingBuffer& operator=(const RingBuffer&) = delete;

  // Takes ownership on success; on failure (full) `item` is left untouched.
  bool tryPush(std::unique_ptr<std::string>& item);
  std::unique_ptr<std::string> tryPop();

  uint64_t bytesQueued() const { return bytes_.load(std::memory_order_relaxed); }
  uint64_t byteBudget() const { return budget_; }

 private:
  struct Slot {
    std::atomic<size_t> sequence;
    std::string* item;
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
