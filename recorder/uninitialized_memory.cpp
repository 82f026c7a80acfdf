#include "recorder/uninitialized_memory.h"

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

void UninitializedMemory::add(const at::Tensor& t) {
  const c10::StorageImpl* k = key(t);
  if (k == nullptr || t.storage().nbytes() == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (storages_.size() >= kSweepAt) dropExpired();
  storages_.insert_or_assign(k, t.storage().getWeakStorageImpl());
  size_.store(storages_.size(), std::memory_order_relaxed);
}

bool UninitializedMemory::contains(const at::Tensor& t) const {
  if (empty()) return false;
  const c10::StorageImpl* k = key(t);
  if (k == nullptr) return false;
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
  storages_.erase(k);
  dropExpired();
  size_.store(storages_.size(), std::memory_order_relaxed);
}

void UninitializedMemory::dropExpired() {
  for (auto it = storages_.begin(); it != storages_.end();) {
    it = it->second.expired() ? storages_.erase(it) : std::next(it);
  }
}

}  // namespace acc::recorder
