// The statistics of many tensors of one device and stream in a fixed,
// small number of kernels: each tensor is cut into rows, the rows of all
// tensors of one element type and row width are gathered into matrices (one
// concatenation per chunk; a chunk of one tensor's rows is that tensor, not
// a copy), and row-wise reductions (min, max, sum, norm, NaN and Inf
// counts, the checksum's two sums) fill one buffer of per-row partials that
// one copy brings back. The host merges each tensor's rows into its
// format::Stats, exactly where the CPU's fused pass is exact (min, max,
// counts, checksum) and to float32 accuracy per row for mean and norm, as
// recorder::deviceStats.
//
// Rows are kRowWidth elements for small tensors and wider for large ones
// (kWidthStep times per class, up to kWidestRow), so that no tensor has more
// than a few thousand rows: the partials the host reads and merges stay a
// small fraction of the data (64 bytes a row). A chunk holds at most
// `chunk_bytes` of rows and temporaries, which bounds the device memory
// statistics take.
//
// Only device-generic ATen ops (cat, amin, amax, sum, linalg_vector_norm,
// isnan, isinf, mul, stack), which every backend implements, so a new
// accelerator needs nothing of its own. On a device a launch costs the host
// microseconds, so what matters is the count: about 20 kernels per chunk,
// whatever the number of tensors in it. A large chunk takes formulas that
// need a few more kernels but read its bytes fewer times (ATen widens a
// reduction's input to its output type with a copy first: an int64 count
// of a bool tensor writes 8 bytes per element).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "format/record.h"
#include "recorder/capture/device/stats_kernels.h"

namespace acc::recorder {

constexpr int64_t kRowWidth = 1024;
// Row widths are kRowWidth * kWidthStep^k up to kWidestRow; a tensor takes
// the widest that leaves it kMinRows rows or more (so at most kMinRows *
// kWidthStep rows, short of the widest). Each width is a group of its own,
// with kernels of its own: most tensors stay in the narrowest.
constexpr int64_t kWidthStep = 16;
constexpr int64_t kWidestRow = int64_t{1} << 22;
constexpr int64_t kMinRows = 256;
// Chunks of at least this many elements take the formulas that read fewer
// bytes per element (about 40 fewer), need less memory and launch about
// eight more kernels (seven for int64): on a GPU (4 TB/s, a few
// microseconds a launch) the bytes cost more from about a million elements
// on. So does a chunk whose short formulas' temporaries would not fit
// chunk_bytes.
constexpr int64_t kLeanChunk = int64_t{1} << 20;
// The device memory one chunk may take (its gathered rows and the
// temporaries of its reductions); StatsBatch passes ACC_BUFFER_MB / 16.
constexpr int64_t kDefaultChunkBytes = int64_t{16} << 20;

class RowStats : public StatsKernels {
 public:
  // min_rows: kMinRows, or fewer to test the wide rows on smaller tensors.
  explicit RowStats(int64_t chunk_bytes = kDefaultChunkBytes, int64_t min_rows = kMinRows)
      : chunk_bytes_(chunk_bytes), min_rows_(min_rows) {}

  size_t add(const at::Tensor& t) override;
  size_t size() const override { return entries_.size(); }
  // The buffer holds per-row partials; stats() merges a tensor's rows.
  at::Tensor launch() override;
  format::Stats stats(size_t i, const double* partials, size_t count) const override;

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
    int64_t width = kRowWidth;  // elements per row
    int64_t first_element = 0;  // element index of the first row in the tensor
    Kind kind = Kind::Whole;
  };
  struct Entry {
    at::Tensor tensor;  // released by launch()
    int64_t elements = 0;  // reals (a complex tensor's are twice its numel)
    bool floating = false;
    std::vector<Segment> segments;
  };
  struct Piece;
  struct Group;

  void launchGroup(const Group& group, std::vector<at::Tensor>& blocks, int64_t& offset);

  int64_t chunk_bytes_, min_rows_;
  std::vector<Entry> entries_;
  bool launched_ = false;
};

}  // namespace acc::recorder
