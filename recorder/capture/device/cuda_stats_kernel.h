// acc's statistics kernel for CUDA (cuda_stats_kernel.cu, compiled by NVRTC
// at run time: cuda_driver.h): the tensor descriptors it reads. One launch
// summarises a whole batch of tensors: each block scans one chunk of one
// tensor (min, max, sum and sum of squares in float64, NaN and Inf counts,
// the checksum of tensor_stats.cpp's fused pass: the element's bits widened
// as ATen widens them, weighted by 2i + 1 over the logical index i) into a
// partial; the last block of a tensor to finish (an atomic count per
// tensor) merges its partials in chunk order into the tensor's row of
// deviceStats()'s layout. Results do not depend on the order blocks run in.
#pragma once

#include <cstddef>
#include <cstdint>

namespace acc::recorder::cuda {

// Dimensions a descriptor holds after merging those that are contiguous
// with each other; a tensor that needs more takes ATen's reductions.
constexpr int kMaxDims = 6;
// Elements per block, and threads per block.
constexpr int64_t kChunk = 16384;
constexpr int kThreads = 256;

// Element types, as the kernel's switch numbers them.
enum class KernelType : int32_t { Float, Double, Half, BFloat16, Bool, Byte, Char, Short, Int, Long };

// One tensor, as the kernel reads it (the layout is repeated in the
// source below; static_asserts in cuda_stats.cpp hold them together).
struct TensorDesc {
  uint64_t data;         // address of element 0 (storage offset applied)
  int64_t numel;
  int64_t first_chunk;   // this tensor's first block in the grid
  int64_t chunks;        // its blocks (at least 1: an empty tensor gets one)
  int64_t row;           // its row in the result
  int32_t type;          // KernelType
  int32_t ndim;          // 1..kMaxDims
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims];  // in elements
};

// The partial a block leaves for its tensor's last block.
constexpr size_t kPartialBytes = 7 * 8;

constexpr const char* kStatsKernelName = "acc_tensor_stats";
// The kernel's source is cuda_stats_kernel.cu, which the build puts into
// the library as a string (cuda_stats_kernel_source.h, generated).

}  // namespace acc::recorder::cuda
