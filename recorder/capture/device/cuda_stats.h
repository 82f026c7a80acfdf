// acc::tensor_stats on CUDA (fused_stats.h): a batch of tensors summarised
// by one launch of acc's own kernel (cuda_stats_kernel.h, compiled by NVRTC
// at run time) after one non-blocking copy of their descriptors, instead of
// about 20 ATen reductions per chunk. Where NVRTC or the driver is missing,
// CUDA tensors keep ATen's reductions (RowStats), and the manifest's
// device_stats.kernel says why.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <vector>

#include "recorder/capture/device/cuda_stats_kernel.h"

namespace acc::recorder {

// Whether acc's kernel serves CUDA device `device` (compiles it on first
// call, once per device).
bool cudaStatsReady(const c10::Device& device);

// What serves CUDA tensors' statistics, for the manifest; empty when no CUDA
// tensor was summarised.
std::string cudaStatsKernel();

// The kernel's descriptor of `t` (a real tensor: complex ones are viewed as
// real first) with its dimensions merged where they are contiguous with
// each other; nullopt when the kernel does not read its type or it keeps
// more than kMaxDims dimensions. `first_chunk` is where its blocks start.
std::optional<cuda::TensorDesc> cudaTensorDesc(const at::Tensor& t, int64_t first_chunk);

// How a batch goes to the kernel, made on the host: the bytes uploaded
// before the launch (the descriptors, then a zeroed count per tensor of its
// finished blocks), the device memory after them for the blocks' partials,
// and the grid. The kernel's arguments are (descriptors, tensors, counts,
// partials, result).
struct CudaStatsPlan {
  std::vector<uint8_t> upload;  // 8-byte aligned length
  int32_t tensors = 0;          // descriptors in `upload`
  int64_t counts_offset = 0;    // where the counts start in it
  int64_t partial_bytes = 0;    // only tensors of several blocks leave partials
  int64_t blocks = 0;
  std::vector<int64_t> aten;    // rows the kernel does not fill (ATen's reductions do)
};
// `kernel`: whether the kernel is there at all (else every row is ATen's).
CudaStatsPlan planCudaStats(at::TensorList tensors, bool kernel);

}  // namespace acc::recorder
