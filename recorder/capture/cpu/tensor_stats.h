// Per-tensor statistics (format::Stats), computed where the tensor lives:
// CPU tensors by one fused pass over memory, other devices by a few ATen
// reductions into one small buffer, the only bytes copied to the host.
#pragma once

#include <cstdint>
#include <optional>
#include <ATen/ATen.h>

#include "format/record.h"
#include "recorder/dtypes.h"

namespace acc::recorder {

format::Stats tensorStats(const at::Tensor& t);

// The two implementations, exposed so tests can check they agree.
format::Stats tensorStatsFused(const at::Tensor& cpu_tensor);
format::Stats tensorStatsAten(const at::Tensor& t);  // blocking: deviceStats, then .cpu()
// The fused pass's result in deviceStats()'s layout, kDeviceStatsSize values
// at `out`, for a CPU tensor of any type (ATen's kernels for those the pass
// does not scan): what a device's own statistics kernel returns for each
// tensor (fused_stats.h). tensorStatsFused() is statsFromBuffer() of it.
void fusedStatsInto(const at::Tensor& cpu_tensor, double* out);

// Whether tensorStats(t) reads t's memory in place and calls no op: a CPU
// tensor of a type the fused pass scans (fused_pass.cpp), contiguous or a
// strided view of up to 32,768 elements. (Complex tensors, copies of larger
// views and ATen's path call ops.)
bool statsReadInPlace(const at::Tensor& t);

// The statistics of `t` as kDeviceStatsSize float64 values on t's device
// (min, max, sum, sum of squares, then nan count, inf count and checksum as
// the bits of int64 values), computed by ATen kernels on that device
// without waiting for it: about 14 kernel launches for a tensor of up to
// 2^20 elements (read as one float64 copy), more for larger floating ones
// (summed in blocks in their own precision, never copied whole).
constexpr int64_t kDeviceStatsSize = 7;
at::Tensor deviceStats(const at::Tensor& t);
// The checksum's weights 1, 3, 5, ... (2 len - 1) as int64 on `device`,
// made once per device and kept (8 MiB at most per device).
at::Tensor checksumWeights(const at::Device& device, int64_t len);
// The unsigned (1 byte) or signed integer type of an element's width, whose
// widening to int64 the checksum weighs: ATen widens uint8 by zeros, the
// others by their sign, as the fused pass does.
at::ScalarType sameWidthInteger(size_t bytes);

// The statistics of a real tensor of `elements` elements of `dtype`, each
// holding `value` (as that type holds it): what an op that fills a tensor
// (zero_, fill_, ones_like) made, known without reading it. nullopt for
// complex and unknown types.
std::optional<format::Stats> constantStats(double value, at::ScalarType dtype, uint64_t elements);

// The elements the statistics run over: a complex tensor's reals.
uint64_t statsElements(const format::Tensor& t);
uint64_t statsElements(const at::Tensor& t);
// Reads such a buffer once it is on the host; `elements` turns the sum into
// the mean.
format::Stats statsFromBuffer(const at::Tensor& host, uint64_t elements);
format::Stats statsFromBuffer(const double* values, uint64_t elements);  // kDeviceStatsSize of them

}  // namespace acc::recorder
