#include "recorder/capture/device/stats_batch.h"

#include <ATen/core/function_schema.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/SmallVector.h>

#include <algorithm>
#include <string>
#include <unordered_map>

#include "recorder/capture/device/cuda_stats.h"
#include "recorder/capture/device/device_capture.h"
#include "recorder/capture/device/fused_stats.h"
#include "recorder/ivalue_tensors.h"
#include "recorder/observe/op_writes.h"
#include "recorder/capture/tensor_capture.h"
#include "recorder/capture/cpu/tensor_stats.h"

namespace acc::recorder {
namespace {

const void* storageOf(const at::Tensor& t) { return t.storage().unsafeGetStorageImpl(); }

c10::Stream currentStream(const c10::Device& device) {
  return c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
}

}  // namespace

bool StatsFlight::arrived() const {
  if (arrived_.load(std::memory_order_acquire)) return true;
  if (!launched()) return false;
  for (const Part& p : parts_) {
    if (!p.failed && p.event && !p.event->query()) return false;
  }
  // Remembered: the batch's other records (hundreds) ask too, and each
  // query is a driver call, which the program's own launches wait behind.
  arrived_.store(true, std::memory_order_release);
  return true;
}

std::optional<format::Stats> StatsFlight::stats(uint32_t slot) const {
  if (slot >= slots_.size()) return std::nullopt;
  const Slot& s = slots_[slot];
  if (s.stale || s.part >= parts_.size()) return std::nullopt;
  const Part& p = parts_[s.part];
  if (p.failed || !p.host.defined()) return std::nullopt;
  return p.kernels->stats(s.index, p.host.data_ptr<double>(), static_cast<size_t>(p.host.numel()));
}

StatsBatch::StatsBatch(size_t max_tensors, uint64_t max_alone_bytes)
    : max_tensors_(std::max<size_t>(max_tensors, 1)), max_alone_bytes_(max_alone_bytes) {}

StatsTicket StatsBatch::add(const at::Tensor& t) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!open_) {
    open_ = std::make_shared<StatsFlight>();
    fused_batch_ = batchesTakeFusedStats(t.device());
  }
  StatsTicket ticket{open_, static_cast<uint32_t>(waiting_.size()), this};
  const void* storage = storageOf(t);
  waiting_.push_back({t, versionOf(t), currentStream(t.device()), at::Tensor(), 0, 0, storage});
  ++storages_[storage];
  size_.store(waiting_.size(), std::memory_order_relaxed);
  bytes_since_check_ += t.nbytes();
  waiting_bytes_ += t.nbytes();
  // With the device's own kernel a batch costs two launches: it runs once
  // its tensors take 4x the alone limit, held or not, so that tensors the
  // program has freed (a step's largest temporaries, the logits' float
  // copies) wait little and add little to the device's peak.
  if (waiting_.size() >= max_tensors_ || (fused_batch_ && waiting_bytes_ >= 4 * max_alone_bytes_) ||
      aloneOverLimitLocked()) {
    launchLocked();
  }
  return ticket;
}

// Whether the waiting tensors nobody but acc holds any more (the program
// has let them go) take more memory than allowed. Looked at again each time
// an eighth of the limit has joined. A storage is acc's alone when every
// reference to it is a waiting tensor's and every reference to those
// tensors a waiting entry's or a waiting view's: a temporary and its views
// (a split's chunks) waiting together hold each other's storage, and count
// as let go.
bool StatsBatch::aloneOverLimitLocked() {
  if (bytes_since_check_ < max_alone_bytes_ / 8) return false;
  bytes_since_check_ = 0;
  // Distinct waiting tensors, by TensorImpl: sorted, with the waiting
  // entries holding each counted.
  std::vector<Holder>& holders = holders_;
  holders.clear();
  for (const Waiting& w : waiting_) {
    if (w.tensor.defined()) holders.push_back({w.tensor.unsafeGetTensorImpl(), &w.tensor, w.storage, 1});
  }
  auto byImpl = [](const Holder& a, const Holder& b) { return a.impl < b.impl; };
  std::sort(holders.begin(), holders.end(), byImpl);
  size_t distinct = 0;
  for (size_t i = 0; i < holders.size(); ++i) {
    if (distinct > 0 && holders[distinct - 1].impl == holders[i].impl) {
      ++holders[distinct - 1].entries;
    } else {
      holders[distinct++] = holders[i];
    }
  }
  holders.resize(distinct);
  // A view holds its base (torch 2's views keep it even under no_grad): a
  // waiting view of a waiting base is one more reference of acc's own.
  for (const Holder& h : holders) {
    if (!h.tensor->is_view()) continue;
    const Holder key{h.tensor->_base().unsafeGetTensorImpl()};
    auto base = std::lower_bound(holders.begin(), holders.end(), key, byImpl);
    if (base != holders.end() && base->impl == key.impl) ++base->entries;
  }
  // By storage: it is acc's alone when every reference to it is a waiting
  // tensor's and every reference to those tensors a waiting entry's or a
  // waiting view's.
  std::sort(holders.begin(), holders.end(), [](const Holder& a, const Holder& b) { return a.storage < b.storage; });
  uint64_t alone = 0;
  for (size_t i = 0; i < holders.size();) {
    size_t j = i;
    bool held = false;
    for (; j < holders.size() && holders[j].storage == holders[i].storage; ++j) {
      held = held || holders[j].tensor->use_count() != holders[j].entries;
    }
    const c10::Storage& storage = holders[i].tensor->storage();
    if (!held && storage.use_count() == j - i) alone += storage.nbytes();
    i = j;
  }
  return alone > max_alone_bytes_;
}

void StatsBatch::beforeOp(const at::RecordFunction& fn) {
  if (size_.load(std::memory_order_relaxed) == 0) return;
  // Only the arguments the op writes are looked at: most ops write none
  // and take no lock here. Scopes without a schema (torch's own named
  // scopes, "detach") are not ops that write; a write nothing announces is
  // caught by the version counter when the batch runs.
  const OpWrites& writes = opWrites(fn);
  if (writes.written.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (waiting_.empty()) return;
  Storages written;  // waiting storages the op writes (a _foreach_ op: many)
  forEachWrittenTensor(writes, fn.inputs(), [&](const at::Tensor& t) {
    if (!t.defined() || !t.has_storage()) return;
    const void* storage = storageOf(t);
    if (storages_.find(storage) == storages_.end()) return;
    if (std::find(written.begin(), written.end(), storage) == written.end()) written.push_back(storage);
  });
  if (!written.empty()) protectLocked(written);
}

// The waiting tensors on `storages` are taken out of harm's way now, on the
// current stream: summarised at once where the device has a statistics
// kernel of its own (one launch for all of them, a few bytes kept), else
// replaced by copies (one launch each, and the copy's memory until the
// batch runs).
void StatsBatch::protectLocked(const Storages& storages) {
  CaptureGuard guard;
  // Small vectors: an op writes one or a few waiting tensors (an optimizer's
  // _foreach_ op, a list of them), and with the watch every in-place op of a
  // step comes here: no allocation for the common case.
  c10::SmallVector<size_t, 8> on_storages;
  for (size_t i = 0; i < waiting_.size(); ++i) {
    const void* storage = waiting_[i].storage;
    if (storage != nullptr && std::find(storages.begin(), storages.end(), storage) != storages.end()) {
      on_storages.push_back(i);
    }
  }
  for (const void* storage : storages) storages_.erase(storage);
  if (on_storages.empty()) return;
  const c10::Device device = waiting_[on_storages.front()].tensor.device();
  bool one_device = true;
  for (size_t i : on_storages) one_device = one_device && waiting_[i].tensor.device() == device;
  if (one_device && batchesTakeFusedStats(device)) {
    std::vector<at::Tensor> tensors;  // one row per tensor
    tensors.reserve(on_storages.size());
    c10::SmallVector<size_t, 8> row(on_storages.size());
    // By TensorImpl: a few compared in turn, a _foreach_ op's hundreds hashed.
    std::unordered_map<const void*, size_t> first;
    const bool hashed = on_storages.size() > 16;
    for (size_t k = 0; k < on_storages.size(); ++k) {
      const at::Tensor& t = waiting_[on_storages[k]].tensor;
      size_t r = 0;
      if (hashed) {
        r = first.emplace(t.unsafeGetTensorImpl(), tensors.size()).first->second;
      } else {
        while (r < tensors.size() && !tensors[r].is_same(t)) ++r;
      }
      if (r == tensors.size()) tensors.push_back(t);
      row[k] = r;
    }
    const at::Tensor values = fusedStats(tensors);
    ++counts_.early;
    for (const at::Tensor& t : tensors) counts_.bytes += t.nbytes();
    for (size_t k = 0; k < on_storages.size(); ++k) {
      Waiting& w = waiting_[on_storages[k]];
      w.summary = values;
      w.summary_row = static_cast<int64_t>(row[k]);
      w.elements = statsElements(w.tensor);
      w.stream = currentStream(device);
      w.tensor = at::Tensor();  // let go: the program may free it
      w.storage = nullptr;
    }
    return;
  }
  std::unordered_map<const void*, at::Tensor> copies;  // by TensorImpl: one copy per tensor
  for (size_t i : on_storages) {
    Waiting& w = waiting_[i];
    at::Tensor& copy = copies[w.tensor.unsafeGetTensorImpl()];
    if (!copy.defined()) {
      copy = w.tensor.clone(at::MemoryFormat::Contiguous);
      ++counts_.copies;
    }
    w.tensor = copy;
    w.version = versionOf(copy);
    w.stream = currentStream(copy.device());
    w.storage = storageOf(copy);
    ++storages_[w.storage];
  }
}

void StatsBatch::flush() {
  if (size_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  launchLocked();
}

void StatsBatch::flushIfOpen(const StatsFlight* flight) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (open_ && open_.get() == flight) launchLocked();
}

void StatsBatch::launchLocked() {
  if (!open_) return;
  std::shared_ptr<StatsFlight> flight = std::move(open_);
  std::vector<Waiting> waiting;
  waiting.swap(waiting_);
  waiting_.swap(spare_waiting_);  // empty, with the capacity of an earlier batch
  storages_.clear();
  size_.store(0, std::memory_order_relaxed);
  bytes_since_check_ = 0;
  waiting_bytes_ = 0;
  CaptureGuard guard;
  // One part per device stream, in order of first appearance.
  flight->slots_.resize(waiting.size());
  for (size_t i = 0; i < waiting.size(); ++i) {
    Waiting& w = waiting[i];
    StatsFlight::Slot& slot = flight->slots_[i];
    if (!w.summary.defined() && versionOf(w.tensor) != w.version) {
      slot.stale = true;
      ++counts_.stale;
      continue;
    }
    auto part = std::find_if(flight->parts_.begin(), flight->parts_.end(),
                             [&](const StatsFlight::Part& p) { return p.stream == w.stream; });
    if (part == flight->parts_.end()) {
      flight->parts_.push_back({w.stream, statsKernelsFor(w.stream.device(), static_cast<int64_t>(max_alone_bytes_ / 2)),
                                at::Tensor(), std::nullopt, false});
      part = flight->parts_.end() - 1;
    }
    slot.part = static_cast<uint32_t>(part - flight->parts_.begin());
    if (w.summary.defined()) {
      // Summarised before an op wrote it (protectLocked): only where
      // batchesTakeFusedStats, so the part is FusedStats.
      slot.index = static_cast<uint32_t>(static_cast<FusedStats&>(*part->kernels).addSummary(w.summary, w.summary_row, w.elements));
    } else {
      slot.index = static_cast<uint32_t>(part->kernels->add(w.tensor));
      counts_.bytes += w.tensor.nbytes();
    }
  }
  for (StatsFlight::Part& p : flight->parts_) {
    try {
      c10::StreamGuard on(p.stream);
      at::Tensor partials = p.kernels->launch();
      const bool cpu = p.stream.device_type() == c10::DeviceType::CPU;  // the unit tests' device: no events
      if (!partials.defined()) {
        p.host = at::empty({0}, at::kDouble);  // only empty tensors
      } else if (cpu) {
        p.host = partials.contiguous();
      } else {
        p.host = hostBuffer(partials.sizes(), at::kDouble, p.stream.device_type());
        p.host.copy_(partials, /*non_blocking=*/true);
      }
      if (!cpu) p.event = recordEvent(p.stream.device());
      counts_.tensors += p.kernels->size();
    } catch (...) {
      p.failed = true;
      counts_.failed += p.kernels->size();
    }
  }
  ++counts_.batches;
  flight->launched_.store(true, std::memory_order_release);
  waiting.clear();  // lets go of the tensors, as the batch's end did before
  spare_waiting_.swap(waiting);
}

StatsBatchCounts StatsBatch::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

nlohmann::json StatsBatch::countsJson() const {
  const StatsBatchCounts c = counts();
  nlohmann::json j = {{"batches", c.batches}, {"tensors", c.tensors}, {"bytes", c.bytes}, {"copies", c.copies},
                      {"early", c.early},     {"stale", c.stale},     {"failed", c.failed}};
  if (std::string kernel = cudaStatsKernel(); !kernel.empty()) j["cuda_kernel"] = std::move(kernel);
  return j;
}

}  // namespace acc::recorder
