#include "recorder/capture/device/fused_stats.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "recorder/capture/device/cuda_stats.h"
#include "recorder/capture/cpu/row_stats.h"
#include "recorder/capture/cpu/tensor_stats.h"

namespace acc::recorder {
namespace {

at::Tensor tensorStatsCpu(at::TensorList tensors) {
  at::Tensor out = at::empty({static_cast<int64_t>(tensors.size()), kDeviceStatsSize}, at::kDouble);
  double* values = out.data_ptr<double>();
  for (size_t i = 0; i < tensors.size(); ++i) fusedStatsInto(tensors[i], values + i * kDeviceStatsSize);
  return out;
}

// Found once: acc defines it when this library loads, before anything asks.
const c10::OperatorHandle* tensorStatsOp() {
  static const c10::OperatorHandle* const op = []() -> const c10::OperatorHandle* {
    auto found = c10::Dispatcher::singleton().findSchema({"acc::tensor_stats", ""});
    return found ? new c10::OperatorHandle(*found) : nullptr;  // never destroyed, as the dispatcher's tables
  }();
  return op;
}

}  // namespace

bool hasFusedStats(const c10::Device& device) {
  if (device.is_cpu()) return true;
  // acc's own kernel, where NVRTC and the driver are there to run it.
  if (device.is_cuda()) return cudaStatsReady(device);
  const c10::OperatorHandle* op = tensorStatsOp();
  if (op == nullptr) return false;
  const c10::DispatchKey key = c10::computeDispatchKey(at::kFloat, at::kStrided, device);
  return op->hasKernelForDispatchKey(key);
}

at::Tensor fusedStats(at::TensorList tensors) {
  static const auto op = tensorStatsOp()->typed<at::Tensor(at::TensorList)>();
  // Below autograd: the op has no derivative, and none is wanted.
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  return op.call(tensors);
}

size_t FusedStats::add(const at::Tensor& t) {
  tensors_.push_back(t);
  elements_.push_back(statsElements(t));
  pieces_.push_back(SIZE_MAX);
  rows_.push_back(tensors_.size() - 1);
  return elements_.size() - 1;
}

size_t FusedStats::addSummary(const at::Tensor& values, int64_t row, uint64_t elements) {
  auto [it, added] = summary_of_.emplace(values.unsafeGetTensorImpl(), summaries_.size());
  if (added) summaries_.push_back(values);
  elements_.push_back(elements);
  pieces_.push_back(it->second);
  rows_.push_back(static_cast<size_t>(row));
  return elements_.size() - 1;
}

at::Tensor FusedStats::launch() {
  std::vector<at::Tensor> tensors = std::move(tensors_);
  std::vector<at::Tensor> pieces = std::move(summaries_);
  tensors_.clear();
  summaries_.clear();
  summary_of_.clear();
  // The added tensors' rows first, each summaries' result after them.
  std::vector<size_t> start(pieces.size());
  size_t at = tensors.size();
  for (size_t p = 0; p < pieces.size(); ++p) {
    start[p] = at;
    at += static_cast<size_t>(pieces[p].size(0));
  }
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (pieces_[i] != SIZE_MAX) rows_[i] += start[pieces_[i]];
  }
  if (!tensors.empty()) pieces.insert(pieces.begin(), fusedStats(tensors));
  if (pieces.empty()) return at::Tensor();
  return pieces.size() == 1 ? pieces.front() : at::cat(pieces, 0);
}

format::Stats FusedStats::stats(size_t i, const double* values, size_t count) const {
  if (i >= elements_.size() || (rows_[i] + 1) * kDeviceStatsSize > count) {
    throw std::out_of_range("acc::tensor_stats: " + std::to_string(count) + " values hold no tensor " +
                            std::to_string(i));
  }
  return statsFromBuffer(values + rows_[i] * kDeviceStatsSize, elements_[i]);
}

bool batchesTakeFusedStats(const c10::Device& device) { return !device.is_cpu() && hasFusedStats(device); }

std::unique_ptr<StatsKernels> statsKernelsFor(const c10::Device& device, int64_t chunk_bytes) {
  if (batchesTakeFusedStats(device)) return std::make_unique<FusedStats>();
  return std::make_unique<RowStats>(chunk_bytes);
}

}  // namespace acc::recorder

TORCH_LIBRARY(acc, m) {
  m.def("tensor_stats(Tensor[] tensors) -> Tensor");
}

TORCH_LIBRARY_IMPL(acc, CPU, m) {
  m.impl("tensor_stats", TORCH_FN(acc::recorder::tensorStatsCpu));
}
