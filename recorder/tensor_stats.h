// Per-tensor statistics (format::Stats), computed where the tensor lives:
// CPU tensors by one fused pass over memory, other devices by a few ATen
// reductions into one small buffer, the only bytes copied to the host.
#pragma once

#include <cstdint>
#include <ATen/ATen.h>

#include "format/record.h"
#include "recorder/dtypes.h"

namespace acc::recorder {

format::Stats tensorStats(const at::Tensor& t);

// The two implementations, exposed so tests can check they agree.
format::Stats tensorStatsFused(const at::Tensor& cpu_tensor);
format::Stats tensorStatsAten(const at::Tensor& t);  // blocking: deviceStats, then .cpu()

// Whether tensorStats(t) reads t's memory in place and calls no op: a
// contiguous CPU tensor of a type the fused pass scans. (Complex tensors,
// copies of views and ATen's path call ops.)
bool statsReadInPlace(const at::Tensor& t);

// The statistics of `t` as kDeviceStatsSize int64 values on t's device: the
// bits of float64 min, max, sum and norm, then the nan count, inf count and
// checksum. Computed by ATen kernels on that device without waiting for it:
// for a contiguous float32 tensor of up to 2^20 elements, a float64 copy
// and nine kernels that each write their slot. statsFromBuffer reads the
// buffer once it is on the host, with the number of elements summed
// (statsElements: complex tensors count as their real and imaginary parts).
constexpr int64_t kDeviceStatsSize = 7;
at::Tensor deviceStats(const at::Tensor& t);
int64_t statsElements(const at::Tensor& t);
format::Stats statsFromBuffer(const at::Tensor& host, int64_t elements);

}  // namespace acc::recorder
