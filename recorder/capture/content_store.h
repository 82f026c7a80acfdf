// Each distinct tensor content recorded once. A tensor whose content an
// earlier record already holds refers to it by id instead of carrying its
// statistics and bytes again (format v4, docs/FORMAT.md "Content
// references"): Adam's chains and every op's output read again as the next
// op's input are summarised and stored once.
//
// A content is one TensorImpl at one autograd version, with its data pointer
// and geometry: every in-place op and copy_ through the dispatcher bumps the
// version (views share it). Contiguous tensors on one storage at one version
// with the same first element, element type and count hold the same bytes in
// the same order, whatever their shapes: a view, reshape, flatten, unsqueeze
// or detach of a contiguous tensor is its base's content, not summarised (or
// stored) again. Writes the counter does not see are guarded:
//  - a second version counter on a storage (a `.data` alias, `t.data = x`,
//    `set_` onto another tensor's storage): once acc sees one, that storage
//    is never deduplicated again;
//  - raw writes (an extension writing through data_ptr, a numpy view) and
//    writes through an alias acc did not see: a CPU hit is confirmed by a
//    checksum of kSamples elements spread over the tensor. Device tensors
//    are not checked: reading them would wait for the device;
//  - ops running below ADInplaceOrView (inside another op's kernel, where
//    in-place ops do not bump versions) are not deduplicated;
//  - arguments a top-level op writes without moving their version (torch
//    2.1's _foreach_ ops on a device; every torch's batch norm, whose nested
//    op updates the running statistics): the observer checks the versions
//    at the op's end (checkVersions), and such a storage is never
//    deduplicated again (writtenUnseen).
// A content becomes referable once the record defining it is queued for the
// writer, so its definition always comes first in the file; to the thread
// that captured that record already while it waits in the thread's batch
// (recorder/write/record_batch.h), whose records keep their order.
#pragma once

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory_resource>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "recorder/side_heap.h"

namespace acc::recorder {

class ContentStore {
 public:
  // A thread's batches of records (record_batch.h), numbered from 1: those
  // up to `queued` are in the writer's queue. A content published from
  // batch n is referable to other threads once `queued` reaches n.
  struct Clock {
    std::atomic<uint64_t> queued{0};
    bool passed(uint64_t batch) const { return queued.load(std::memory_order_acquire) >= batch; }
  };

  // A content defined by a record that is not queued yet.
  struct Pending {
    c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> impl{
        c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>()};
    const void* storage = nullptr;
    uint32_t version = 0;
    const void* data = nullptr;
    int64_t offset = 0;
    at::ScalarType dtype = at::kFloat;
    c10::DimVector sizes, strides;
    int64_t numel = 0;
    bool contiguous = false;
    uint64_t sample = 0;  // CPU tensors: checksum of kSamples elements
    uint64_t id = 0;
    // Its bytes are recorded as a delta on a chain of this many earlier
    // contents (format v8; 0: as they are). Set by the record defining it.
    uint8_t delta_depth = 0;
    // Published from this batch of this clock's thread; null: queued.
    const Clock* clock = nullptr;
    uint64_t batch = 0;
  };

  struct Content {
    uint64_t id = 0;   // 0: not deduplicated (no version counter, aliased storage, inside a kernel)
    bool ref = false;  // a queued record, or `pending`, holds it already
    uint8_t delta_depth = 0;  // a reference: its content's Pending::delta_depth
  };
  // The content of `t`: an earlier one, or a new id remembered in `pending`
  // (the record being captured), whose record must then capture it whole.
  // Earlier ones are those queued, and those `mine` (the capturing thread's
  // batches) published.
  Content identify(const at::Tensor& t, std::vector<Pending>& pending, const Clock* mine = nullptr);
  // Makes `pending` referable: its record has been queued (`clock` null),
  // or has joined batch `batch` of `clock`'s thread.
  void publish(std::vector<Pending>& pending, const Clock* clock = nullptr, uint64_t batch = 0);
  // `t`'s storage is written where no version counter sees it (a
  // collective's result, filled in by its backend's thread): never
  // deduplicated again, as a storage with two counters.
  void writtenUnseen(const at::Tensor& t);

  // A content defined in `pending` is recorded as a delta (format v8), on
  // its base's values mapped by the op's arithmetic (v9) or not.
  void countDelta(bool mapped) {
    deltas_.fetch_add(1, std::memory_order_relaxed);
    if (mapped) mapped_deltas_.fetch_add(1, std::memory_order_relaxed);
  }

  nlohmann::json countsJson() const;  // manifest "contents"

 private:
  // A published contiguous content of a storage, for its other views.
  struct Flat {
    const void* data = nullptr;  // nullptr: empty
    int64_t numel = 0;
    at::ScalarType dtype = at::kFloat;
    uint32_t version = 0;
    uint8_t delta_depth = 0;
    uint64_t sample = 0, id = 0;
    const Clock* clock = nullptr;  // as Pending's
    uint64_t batch = 0;
  };
  static constexpr size_t kFlatPerStorage = 2;
  struct StorageEntry {
    c10::weak_intrusive_ptr<c10::StorageImpl> guard;  // keeps the address unique
    const void* counter = nullptr;  // the version counter seen with it
    bool aliased = false;           // a second counter was seen
    // Its latest contiguous contents: every view of the storage shares the
    // counter (a second one ends its deduplication), so a lower version
    // than the tensor's is a content that can never be met again.
    std::array<Flat, kFlatPerStorage> flat{};
  };
  bool keyable(const at::Tensor& t) const;
  // `t`'s storage's entry, made if new; nullptr where its contents are not
  // deduplicated (aliased, or the table is full).
  StorageEntry* storageUsable(const at::Tensor& t);  // holds mu_
  void rememberFlat(StorageEntry& storage, const Pending& p);  // holds mu_
  void forget(const c10::StorageImpl* storage);  // holds mu_: marks it aliased
  void sweep();                             // holds mu_

  using Storages = std::pmr::unordered_map<const c10::StorageImpl*, StorageEntry>;
  using Contents = std::pmr::unordered_map<const c10::TensorImpl*, std::pmr::vector<Pending>>;
  Storages::iterator addStorage(const at::Tensor& t, const void* counter);  // holds mu_
  Contents::iterator addContents(const c10::TensorImpl* impl);               // holds mu_
  Storages::iterator dropStorage(Storages::iterator it);                     // holds mu_
  Contents::iterator dropContents(Contents::iterator it);                    // holds mu_

  mutable std::mutex mu_;
  // The maps' nodes and buffers live across steps: out of the program's
  // heap (side_heap.h). Declared first, destroyed last.
  SideHeap heap_;
  Storages storages_{heap_.resource()};
  // Contents by TensorImpl: those of its latest published version.
  Contents contents_{heap_.resource()};
  // Entries of dead tensors and storages, emptied, for new ones: most
  // tensors a step makes die within it, and their entries would otherwise
  // cost three allocations per tensor recorded.
  std::vector<Storages::node_type> spare_storages_;
  std::vector<Contents::node_type> spare_contents_;
  size_t published_since_sweep_ = 0;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<uint64_t> defined_{0}, referenced_{0}, sample_mismatches_{0}, aliased_storages_{0}, deltas_{0},
      mapped_deltas_{0};
};

}  // namespace acc::recorder
