// Storages that user code got from an empty-family op (torch.empty,
// empty_like, new_empty, ...) and that no op has written yet. Their contents
// are whatever the allocator handed out, different on every run and device,
// so tensors on them are recorded without values instead of being reported
// as a divergence. An op that writes one (schema `Tensor(a!)`: fill_,
// uniform_, copy_, out= arguments) makes it ordinary memory again.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/intrusive_ptr.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace acc::recorder {

class UninitializedMemory {
 public:
  void add(const at::Tensor& t);
  bool contains(const at::Tensor& t) const;
  void written(const at::Tensor& t);
  // Lock-free: lets every op skip the lookups while nothing is tracked.
  bool empty() const { return size_.load(std::memory_order_relaxed) == 0; }
  // Called by each op that finds the map not empty: every kSweepEvery
  // calls, entries whose storage was freed unwritten are dropped, so that
  // empty() turns true again: a program's buffer taken with torch.empty
  // and dropped unwritten would otherwise make every later op look its
  // inputs up for the rest of the run. (torch 1.13's record_function
  // handles were such, until the observer saw their empty as nested.)
  void sweepSometimes();
  static constexpr uint32_t kSweepEvery = 64;

 private:
  static const c10::StorageImpl* key(const at::Tensor& t);
  static size_t bucket(const c10::StorageImpl* k);
  void insert(const c10::StorageImpl* k, c10::weak_intrusive_ptr<c10::StorageImpl> weak);  // mu_ held
  void erase(const c10::StorageImpl* k);  // mu_ held
  void dropExpired();  // mu_ held

  // A counting filter over the tracked keys, read without the lock: every
  // op's inputs are looked up, and a dead entry (swept only on the next add
  // or write) would otherwise make each of those lookups take the mutex.
  static constexpr size_t kBuckets = 1024;
  std::atomic<uint32_t> calls_{0};  // sweepSometimes()'s
  std::array<std::atomic<uint32_t>, kBuckets> filter_{};

  mutable std::mutex mu_;
  // Weak: a freed storage's address may come back for a new one.
  std::unordered_map<const c10::StorageImpl*, c10::weak_intrusive_ptr<c10::StorageImpl>> storages_;
  std::atomic<size_t> size_{0};
};

}  // namespace acc::recorder
