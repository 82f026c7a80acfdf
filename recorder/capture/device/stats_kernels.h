// How the tensors of one device and stream in a batch (stats_batch.h) become
// their statistics: one interface, two implementations. FusedStats
// (fused_stats.h) launches the device's own kernel once for all of them;
// RowStats (row_stats.h) takes ATen's generic reductions, about 20 launches
// per chunk, on devices without one.
#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "format/record.h"

namespace acc::recorder {

class StatsKernels {
 public:
  virtual ~StatsKernels() = default;
  // Adds a tensor (strided, of a type dtypeOf() knows, on the device of the
  // others); returns its index for stats(). Its values are read by launch().
  virtual size_t add(const at::Tensor& t) = 0;
  virtual size_t size() const = 0;
  // Launches the kernels on the current stream and returns the device
  // buffer (float64) that stats() reads once it is on the host; undefined
  // when nothing needs a kernel. Releases the tensors. Call once.
  virtual at::Tensor launch() = 0;
  // The statistics of tensor i, from the launched buffer copied to the host
  // (`values`: its data, `count`: its float64 values).
  virtual format::Stats stats(size_t i, const double* values, size_t count) const = 0;
};

// The device's own kernel where it has one, else RowStats with chunks of at
// most `chunk_bytes` of device memory.
std::unique_ptr<StatsKernels> statsKernelsFor(const c10::Device& device, int64_t chunk_bytes);

}  // namespace acc::recorder
