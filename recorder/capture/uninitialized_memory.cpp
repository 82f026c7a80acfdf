#include "recorder/capture/uninitialized_memory.h"

namespace acc::recorder {
namespace {

// Model construction creates a few tensors per layer; more than this many
// live at once would mean something else is going on, and the map is
// swept before it grows further.
constexpr size_t kSweepAt = 4096;

}  // namespace

const c10::StorageImpl* UninitializedMemory::key(const at::Tensor& t) {
  if (!t.defined() || !t.has_storage()) return nullptr;
  return t.storage().unsafeGetStorageImpl();
}

size_t UninitializedMemory::bucket(const c10::StorageImpl* k) {
  // StorageImpls are heap objects: the low bits carry no information.
  const auto v = reinterpret_cast<uintptr_t>(k) >> 4;
  return (v ^ (v >> 10)) % kBuckets;
}

void UninitializedMemory::insert(const c10::StorageImpl* k, c10::weak_intrusive_ptr<c10::StorageImpl> weak) {
  if (storages_.insert_or_assign(k, std::move(weak)).second) {
    filter_[bucket(k)].fetch_add(1, std::memory_order_relaxed);
  }
}

void UninitializedMemory::erase(const c10::StorageImpl* k) {
  if (storages_.erase(k) != 0) filter_[bucket(k)].fetch_sub(1, std::memory_order_relaxed);
}

void UninitializedMemory::add(const at::Tensor& t) {
  const c10::StorageImpl* k = key(t);
  if (k == nullptr || t.storage().nbytes() == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (storages_.size() >= kSweepAt) dropExpired();
  insert(k, t.storage().getWeakStorageImpl());
  size_.store(storages_.size(), std::memory_order_relaxed);
}

bool UninitializedMemory::contains(const at::Tensor& t) const {
  if (empty()) return false;
  const c10::StorageImpl* k = key(t);
  if (k == nullptr || filter_[bucket(k)].load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = storages_.find(k);
  if (it == storages_.end()) return false;
  c10::intrusive_ptr<c10::StorageImpl> alive = it->second.lock();
  return alive.get() == k;
}

void UninitializedMemory::written(const at::Tensor& t) {
  const c10::StorageImpl* k = key(t);
  if (k == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  erase(k);
  dropExpired();
  size_.store(storages_.size(), std::memory_order_relaxed);
}

void UninitializedMemory::sweepSometimes() {
  if (calls_.fetch_add(1, std::memory_order_relaxed) % kSweepEvery != kSweepEvery - 1) return;
  std::lock_guard<std::mutex> lock(mu_);
  dropExpired();
  size_.store(storages_.size(), std::memory_order_relaxed);
}

void UninitializedMemory::dropExpired() {
  for (auto it = storages_.begin(); it != storages_.end();) {
    if (it->second.expired()) {
      filter_[bucket(it->first)].fetch_sub(1, std::memory_order_relaxed);
      it = storages_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace acc::recorder
