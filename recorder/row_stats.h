// The statistics of many tensors of one device and stream in a fixed,
// small number of kernels: each tensor is cut into rows of kRowWidth
// elements, the rows of all tensors of one element type are gathered into
// matrices by one concatenation per kRowsPerChunk rows, and row-wise
// reductions (min, max, sum, norm, NaN and Inf counts, the checksum's two
// sums) fill one buffer of per-row partials that one copy brings back. The
// host merges each tensor's rows into its format::Stats, exactly where the
// CPU's fused pass is exact (min, max, counts, checksum) and to float32
// accuracy per row for mean and norm, as recorder::deviceStats.
//
// Only device-generic ATen ops (cat, amin, amax, sum, linalg_vector_norm,
// isnan, isinf, mul, stack), which every backend implements, so a new
// accelerator needs nothing of its own. On a device a launch costs the host
// microseconds, so what matters is the count: about 20 kernels per chunk and
// element type, whatever the number of tensors in it.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "format/record.h"

namespace acc::recorder {

constexpr int64_t kRowWidth = 1024;
// Rows per gathered matrix: bounds the temporaries of one chunk (its copy,
// an int64 copy for the checksum) to about 12 bytes per element of 2^19.
constexpr int64_t kRowsPerChunk = 512;

class RowStats {
 public:
  // Adds a tensor (strided, of a type dtypeOf() knows, on the device of the
  // others); returns its index for stats(). Its values are read by launch().
  size_t add(const at::Tensor& t);
  size_t size() const { return entries_.size(); }

  // Launches the kernels on the current stream and returns the device
  // buffer of partials (float64) that stats() reads once it is on the host.
  // Releases the tensors. Call once.
  at::Tensor launch();

  // The statistics of tensor i, from the launched buffer copied to the host
  // (`partials`: its data, `count`: its float64 values).
  format::Stats stats(size_t i, const double* partials, size_t count) const;

 private:
  // A tensor's last elements, fewer than a row, take three rows: padded
  // with zeros (for the sums, counts and checksum), with the type's largest
  // value (its min) and with its smallest (its max). Extra rows, not extra
  // kernels: the same reductions run over them.
  enum class Kind : uint8_t { Whole, Tail, TailMin, TailMax };
  // Rows of one tensor that sit side by side in one block of partials.
  struct Segment {
    int64_t floats = 0;  // offset of the first row's 4 float64 values (min, max, sum, norm)
    int64_t counts = 0;  // offset of its integer values (NaN, Inf, then the checksum's two sums)
    int64_t rows = 0;
    int64_t first_element = 0;  // element index of the first row in the tensor
    Kind kind = Kind::Whole;
  };
  struct Entry {
    at::Tensor tensor;  // released by launch()
    int64_t elements = 0;  // reals (a complex tensor's are twice its numel)
    bool floating = false;
    std::vector<Segment> segments;
  };
  struct Group;

  void launchGroup(const Group& group, std::vector<at::Tensor>& blocks, int64_t& offset);

  std::vector<Entry> entries_;
  bool launched_ = false;
};

}  // namespace acc::recorder
