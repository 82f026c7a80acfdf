// A device's own statistics kernel: the op acc::tensor_stats(Tensor[]) ->
// Tensor, one launch for a whole batch of tensors, returning [n,
// kDeviceStatsSize] float64 values on their device (deviceStats()'s layout,
// one row per tensor). acc defines it and its CPU kernel (the fused pass); a
// backend that registers a kernel for its own dispatch key (a vendor's NPU
// plugin; the test device, tests/accelerator/testdev.cpp) gets its batches
// summarised by that kernel. Devices without one take RowStats (ATen's
// generic reductions, about 20 launches per chunk). A backend's generic
// fallback does not count: it may copy to the host and wait for the device.
#pragma once

#include <ATen/ATen.h>

#include <unordered_map>
#include <vector>

#include "recorder/capture/device/stats_kernels.h"

namespace acc::recorder {

// Whether tensors on `device` have a kernel of their own for
// acc::tensor_stats.
bool hasFusedStats(const c10::Device& device);

// Whether a batch's tensors on `device` take FusedStats (statsKernelsFor):
// a device other than the CPU, whose batches (the unit tests') take the
// rows, with a kernel of its own.
bool batchesTakeFusedStats(const c10::Device& device);

// Launches acc::tensor_stats on the tensors (all on one device that
// hasFusedStats) on the current stream; does not wait for it.
at::Tensor fusedStats(at::TensorList tensors);

// A batch's tensors of one device and stream, summarised by one launch of
// the device's kernel: no gathering copy, no temporaries beyond the result.
class FusedStats : public StatsKernels {
 public:
  size_t add(const at::Tensor& t) override;
  // A tensor summarised already: row `row` of `values` (one launch's
  // [n, kDeviceStatsSize] result on the device, for n tensors), of
  // `elements` reals. launch() puts each such result, once, beside the
  // others' rows with the same concatenation (no view made per tensor).
  size_t addSummary(const at::Tensor& values, int64_t row, uint64_t elements);
  size_t size() const override { return elements_.size(); }
  // One launch for the added tensors, one more to concatenate summaries.
  at::Tensor launch() override;
  format::Stats stats(size_t i, const double* values, size_t count) const override;

 private:
  std::vector<at::Tensor> tensors_;    // released by launch()
  std::vector<at::Tensor> summaries_;  // each result once; released by launch()
  std::unordered_map<const void*, size_t> summary_of_;  // by TensorImpl: its place in summaries_
  std::vector<uint64_t> elements_;     // by index: reals (a complex tensor's are twice its numel)
  // By index: its row in launch()'s result (added by addSummary: its row in
  // its result, until launch() adds where that result begins).
  std::vector<size_t> rows_;
  std::vector<size_t> pieces_;         // by index: its result in summaries_, or SIZE_MAX (added)
};

}  // namespace acc::recorder
