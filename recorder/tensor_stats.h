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

// The statistics of `t` as kDeviceStatsSize float64 values on t's device
// (min, max, mean, norm, then nan count, inf count and checksum as the bits
// of int64 values), computed by ATen kernels on that device without copying
// a floating tensor to float64 and without waiting for the device.
constexpr int64_t kDeviceStatsSize = 7;
at::Tensor deviceStats(const at::Tensor& t);
// Reads such a buffer once it is on the host.
format::Stats statsFromBuffer(const at::Tensor& host);

}  // namespace acc::recorder
