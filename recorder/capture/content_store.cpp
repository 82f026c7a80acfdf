#include "recorder/capture/content_store.h"

#include <c10/core/impl/LocalDispatchKeySet.h>

#include <algorithm>
#include <cstring>

#include "recorder/torch_compat.h"

namespace acc::recorder {
namespace {

// Elements read to confirm a CPU hit: a write through data_ptr that changes
// a run of elements changes one of them; tensors this small are read whole.
constexpr int64_t kSamples = 16;
// Contents kept per TensorImpl (one per geometry at its latest version).
constexpr size_t kPerTensor = 4;
// Dead entries are swept every this many publications; beyond the caps the
// store stops remembering (it never grows without bound). Often: an entry's
// weak references keep its dead TensorImpl and StorageImpl allocated, and
// small objects left among a program's tensors keep the heap from shrinking
// (swept every 4,096, resnet18 + AdamW peaked 208 MB above its own run).
// The store's own nodes are kept out of that heap (side_heap.h).
constexpr size_t kSweepEvery = 64;
constexpr size_t kMaxTensors = size_t(1) << 16;
constexpr size_t kMaxStorages = size_t(1) << 18;

// Emptied entries kept for reuse, of each map: a sweep (every kSweepEvery
// publications) frees about as many as the records between two sweeps
// defined.
constexpr size_t kSpareEntries = 1024;

uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}

inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

const char* firstElement(const at::Tensor& t) {
  return static_cast<const char*>(t.storage().data()) + t.storage_offset() * static_cast<int64_t>(t.element_size());
}

// Checksum of kSamples elements at evenly spread row-major positions
// (i * (n - 1) / (k - 1)). Every CPU tensor an op meets is sampled, so the
// positions are stepped without a division each, a contiguous tensor's
// position is its offset, and the common element sizes are read by a fixed
// memcpy (no call): a third of what identify() cost per tensor.
uint64_t sampleOf(const at::Tensor& t) {
  const int64_t n = t.numel();
  if (n == 0) return 0;
  const int64_t element = t.element_size();
  const char* base = firstElement(t);
  const int64_t k = std::min(n, kSamples);
  const int64_t parts = k == 1 ? 1 : k - 1, span = k == 1 ? 0 : n - 1;
  const int64_t step = span / parts, step_rest = span % parts;
  const bool contiguous = t.is_contiguous();
  const at::IntArrayRef sizes = t.sizes(), strides = t.strides();
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  int64_t position = 0, rest = 0;
  for (int64_t i = 0; i < k; ++i) {
    int64_t offset = position;
    if (!contiguous) {
      offset = 0;
      int64_t left = position;
      for (size_t d = sizes.size(); d-- > 0;) {
        offset += (left % sizes[d]) * strides[d];
        left /= sizes[d];
      }
    }
    const char* at = base + offset * element;
    uint64_t v[2] = {0, 0};
    switch (element) {
      case 1: std::memcpy(v, at, 1); break;
      case 2: std::memcpy(v, at, 2); break;
      case 4: std::memcpy(v, at, 4); break;
      case 8: std::memcpy(v, at, 8); break;
      default: std::memcpy(v, at, static_cast<size_t>(std::min<int64_t>(element, 16))); break;
    }
    // One multiply and a rotation per element, each step a bijection of h
    // (so one changed element always changes the sample); mixed once at
    // the end. A full mix per element (two multiplies, three shifts) took
    // an eighth of identify()'s own instructions on the transformer LM.
    h = rotl64((h ^ v[0]) * 0x9fb21c651e98df25ULL, 29) + v[1];
    position += step;
    rest += step_rest;
    if (rest >= parts) {
      rest -= parts;
      ++position;
    }
  }
  return mix(h);
}

bool sameContent(const ContentStore::Pending& p, const at::Tensor& t, uint32_t version, const void* data) {
  return p.impl._unsafe_get_target() == t.unsafeGetTensorImpl() && p.version == version && p.data == data &&
         p.offset == t.storage_offset() && p.dtype == t.scalar_type() && at::IntArrayRef(p.sizes) == t.sizes() &&
         at::IntArrayRef(p.strides) == t.strides();
}

// The same bytes in the same order as `p` on `t`'s storage at `version`:
// both contiguous, from the same first element, of one type and count.
bool sameBytes(const ContentStore::Pending& p, const at::Tensor& t, uint32_t version, const void* data) {
  return p.contiguous && p.version == version && p.data == data && p.dtype == t.scalar_type() &&
         p.numel == t.numel() && p.storage == t.storage().unsafeGetStorageImpl() && t.is_contiguous() &&
         !p.impl.expired();
}

// Published where `mine`'s thread may refer to it: queued, or from that
// thread's own batches, whose records keep their order.
bool referable(const ContentStore::Clock* clock, uint64_t batch, const ContentStore::Clock* mine) {
  return clock == nullptr || clock == mine || clock->passed(batch);
}

}  // namespace

bool ContentStore::keyable(const at::Tensor& t) const {
  // Below ADInplaceOrView (inside an op's kernel, inference mode) in-place
  // ops do not bump versions, so the version says nothing there.
  return t.defined() && t.layout() == at::kStrided && !t.is_inference() && t.has_storage() &&
         compat::versionCounterIdentity(*t.unsafeGetTensorImpl()) != nullptr &&
         !c10::impl::tls_is_dispatch_key_excluded(c10::DispatchKey::ADInplaceOrView);
}

ContentStore::Storages::iterator ContentStore::addStorage(const at::Tensor& t, const void* counter) {
  StorageEntry entry{t.storage().getWeakStorageImpl(), counter, false};
  if (spare_storages_.empty()) return storages_.emplace(t.storage().unsafeGetStorageImpl(), std::move(entry)).first;
  Storages::node_type node = std::move(spare_storages_.back());
  spare_storages_.pop_back();
  node.key() = t.storage().unsafeGetStorageImpl();
  node.mapped() = std::move(entry);
  return storages_.insert(std::move(node)).position;
}

ContentStore::Contents::iterator ContentStore::addContents(const c10::TensorImpl* impl) {
  if (spare_contents_.empty()) return contents_.try_emplace(impl).first;
  Contents::node_type node = std::move(spare_contents_.back());
  spare_contents_.pop_back();
  node.key() = impl;
  return contents_.insert(std::move(node)).position;
}

ContentStore::Storages::iterator ContentStore::dropStorage(Storages::iterator it) {
  auto next = std::next(it);
  Storages::node_type node = storages_.extract(it);
  if (spare_storages_.size() < kSpareEntries) {
    node.mapped().guard.reset();  // lets go of the storage's weak reference
    spare_storages_.push_back(std::move(node));
  }
  return next;
}

ContentStore::Contents::iterator ContentStore::dropContents(Contents::iterator it) {
  auto next = std::next(it);
  Contents::node_type node = contents_.extract(it);
  if (spare_contents_.size() < kSpareEntries) {
    node.mapped().clear();  // lets go of the tensors' weak references, keeps the buffer
    spare_contents_.push_back(std::move(node));
  }
  return next;
}

ContentStore::StorageEntry* ContentStore::storageUsable(const at::Tensor& t) {
  const c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
  const void* counter = compat::versionCounterIdentity(*t.unsafeGetTensorImpl());
  auto it = storages_.find(storage);
  if (it == storages_.end()) {
    if (storages_.size() >= kMaxStorages) return nullptr;
    return &addStorage(t, counter)->second;
  }
  StorageEntry& e = it->second;
  if (e.guard.expired()) {  // cannot happen while `t` holds it; start afresh anyway
    e = StorageEntry{t.storage().getWeakStorageImpl(), counter, false};
    return &e;
  }
  if (e.aliased) return nullptr;
  if (e.counter != counter) {
    // Writes through one counter are invisible to the other: from now on
    // this storage's contents are summarised every time.
    forget(storage);
    return nullptr;
  }
  return &e;
}

void ContentStore::rememberFlat(StorageEntry& storage, const Pending& p) {
  std::array<Flat, kFlatPerStorage>& flat = storage.flat;
  Flat* slot = nullptr;
  for (Flat& f : flat) {
    if (f.data == p.data && f.numel == p.numel && f.dtype == p.dtype) slot = &f;
  }
  if (slot != nullptr && slot->version > p.version) return;  // a later one was published first
  // The same content, defined again by a thread that could not refer to it
  // yet: the definition every thread may refer to stays.
  if (slot != nullptr && slot->version == p.version && referable(slot->clock, slot->batch, nullptr)) return;
  for (size_t i = 0; slot == nullptr && i < flat.size(); ++i) {
    if (flat[i].data == nullptr || flat[i].version < p.version) slot = &flat[i];
  }
  if (slot == nullptr) {  // all current: the newest goes first, the oldest out
    std::move_backward(flat.begin(), flat.end() - 1, flat.end());
    slot = &flat[0];
  }
  *slot = Flat{p.data, p.numel, p.dtype, p.version, p.delta_depth, p.sample, p.id, p.clock, p.batch};
}

void ContentStore::forget(const c10::StorageImpl* storage) {
  auto it = storages_.find(storage);
  if (it == storages_.end() || it->second.aliased) return;
  StorageEntry& e = it->second;
  e.aliased = true;
  aliased_storages_.fetch_add(1, std::memory_order_relaxed);
  for (auto c = contents_.begin(); c != contents_.end();) {
    c = !c->second.empty() && c->second.front().storage == storage ? dropContents(c) : std::next(c);
  }
}

void ContentStore::writtenUnseen(const at::Tensor& t) {
  if (!t.defined() || !t.has_storage()) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = storages_.find(t.storage().unsafeGetStorageImpl());
  if (it == storages_.end()) {
    if (storages_.size() >= kMaxStorages) return;  // a full table dedups nothing new anyway
    it = addStorage(t, nullptr);
  }
  forget(it->first);
}

ContentStore::Content ContentStore::identify(const at::Tensor& t, std::vector<Pending>& pending, const Clock* mine) {
  if (!keyable(t)) return {};
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  const uint32_t version = impl->version_counter().current_version();
  const void* data = firstElement(t);
  const bool cpu = t.device().is_cpu();
  uint64_t id = 0, sample = 0;
  uint8_t depth = 0;
  for (const Pending& p : pending) {
    if (sameContent(p, t, version, data) || sameBytes(p, t, version, data)) {
      id = p.id;
      sample = p.sample;
      depth = p.delta_depth;
    }
  }
  const bool contiguous = t.is_contiguous();
  {
    std::lock_guard<std::mutex> lock(mu_);
    StorageEntry* storage = storageUsable(t);
    if (storage == nullptr) return {};
    if (id == 0) {
      auto it = contents_.find(impl);
      if (it != contents_.end()) {
        for (const Pending& p : it->second) {
          if (!p.impl.expired() && sameContent(p, t, version, data) && referable(p.clock, p.batch, mine)) {
            id = p.id;
            sample = p.sample;
            depth = p.delta_depth;
          }
        }
      }
    }
    if (id == 0 && contiguous) {  // another view of a content seen before
      for (const Flat& f : storage->flat) {
        if (f.data == data && f.version == version && f.numel == t.numel() && f.dtype == t.scalar_type() &&
            referable(f.clock, f.batch, mine)) {
          id = f.id;
          sample = f.sample;
          depth = f.delta_depth;
        }
      }
    }
  }
  const uint64_t now = cpu ? sampleOf(t) : 0;
  if (id != 0 && now == sample) {
    referenced_.fetch_add(1, std::memory_order_relaxed);
    return {id, true, depth};
  }
  if (id != 0) {
    // Written behind the version counter's back: forget what was known.
    sample_mismatches_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = contents_.find(impl); it != contents_.end()) dropContents(it);
    if (auto it = storages_.find(t.storage().unsafeGetStorageImpl()); it != storages_.end()) {
      it->second.flat = {};
    }
  }
  Pending p;
  p.impl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(t.getIntrusivePtr());
  p.storage = t.storage().unsafeGetStorageImpl();
  p.version = version;
  p.data = data;
  p.offset = t.storage_offset();
  p.dtype = t.scalar_type();
  p.sizes = c10::DimVector(t.sizes());
  p.strides = c10::DimVector(t.strides());
  p.numel = t.numel();
  p.contiguous = contiguous;
  p.sample = now;
  p.id = next_id_.fetch_add(1, std::memory_order_relaxed);
  defined_.fetch_add(1, std::memory_order_relaxed);
  pending.push_back(std::move(p));
  return {pending.back().id, false};
}

void ContentStore::publish(std::vector<Pending>& pending, const Clock* clock, uint64_t batch) {
  if (pending.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (Pending& p : pending) {
    p.clock = clock;
    p.batch = batch;
    const c10::TensorImpl* impl = p.impl._unsafe_get_target();
    auto storage = storages_.find(static_cast<const c10::StorageImpl*>(p.storage));
    if (p.impl.expired() || storage == storages_.end() || storage->second.aliased) continue;
    if (p.contiguous) rememberFlat(storage->second, p);
    auto it = contents_.find(impl);
    if (it == contents_.end()) {
      if (contents_.size() >= kMaxTensors) continue;
      it = addContents(impl);
    }
    std::pmr::vector<Pending>& known = it->second;
    // Versions only grow: older ones can never be met again.
    if (!known.empty() && known.front().version > p.version) continue;
    if (!known.empty() && known.front().version < p.version) known.clear();
    if (known.size() < kPerTensor) known.push_back(std::move(p));
  }
  pending.clear();
  if (++published_since_sweep_ >= kSweepEvery) sweep();
}

void ContentStore::sweep() {
  published_since_sweep_ = 0;
  for (auto it = contents_.begin(); it != contents_.end();) {
    it = it->second.empty() || it->second.front().impl.expired() ? dropContents(it) : std::next(it);
  }
  // Aliased storages stay marked while they live.
  for (auto it = storages_.begin(); it != storages_.end();) {
    it = it->second.guard.expired() ? dropStorage(it) : std::next(it);
  }
}

nlohmann::json ContentStore::countsJson() const {
  return {{"defined", defined_.load()},
          {"referenced", referenced_.load()},
          {"sample_mismatches", sample_mismatches_.load()},
          {"aliased_storages", aliased_storages_.load()},
          {"deltas", deltas_.load()},
          {"mapped_deltas", mapped_deltas_.load()}};
}

}  // namespace acc::recorder
