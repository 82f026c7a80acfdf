#include "recorder/capture/cpu/row_stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "recorder/capture/cpu/tensor_stats.h"

namespace acc::recorder {
namespace {

// A tensor as the flat row-major sequence of elements its statistics run
// over: a complex tensor's reals, a bool tensor's bytes (0 or 1: the same
// values, and a type every reduction takes). A view when it can be one.
at::Tensor flatElements(const at::Tensor& t) {
  at::Tensor r = t.is_complex() ? at::view_as_real(t.resolve_conj()) : t;
  if (r.scalar_type() == at::kBool) r = r.view(at::kByte);
  return r.reshape({-1});
}

bool isFloating(at::ScalarType type) { return at::isFloatingType(type); }

// Rows are padded to kRowWidth: with zeros for the sums and the checksum
// (a zero adds nothing to either), and with the type's largest and smallest
// values for a tail row's min and max. Made once per device and type.
struct Pads {
  at::Tensor zero, high, low;
};

const Pads& padsFor(const at::Device& device, at::ScalarType type) {
  static std::mutex mutex;
  // Never destroyed: device tensors must not be freed by a static destructor
  // after the device's runtime has shut down.
  static auto* cache = new std::map<std::pair<std::string, int>, Pads>();
  std::lock_guard<std::mutex> lock(mutex);
  Pads& p = (*cache)[{device.str(), static_cast<int>(type)}];
  if (!p.zero.defined()) {
    const at::TensorOptions options = at::TensorOptions().dtype(type).device(device);
    p.zero = at::zeros({kRowWidth}, options);
    if (isFloating(type)) {
      p.high = at::full({kRowWidth}, std::numeric_limits<double>::infinity(), options);
      p.low = at::full({kRowWidth}, -std::numeric_limits<double>::infinity(), options);
    } else {
      AT_DISPATCH_INTEGRAL_TYPES(type, "acc_row_pads", [&] {
        p.high = at::full({kRowWidth}, static_cast<int64_t>(std::numeric_limits<scalar_t>::max()), options);
        p.low = at::full({kRowWidth}, static_cast<int64_t>(std::numeric_limits<scalar_t>::lowest()), options);
      });
    }
  }
  return p;
}

// Row minima and maxima in one kernel where the backend has it (aminmax;
// torch 1.13's CPU has none for 16-bit floats), else two. Learnt once per
// device type and element type.
std::pair<at::Tensor, at::Tensor> rowExtremes(const at::Tensor& x) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, bool> works;
  const std::pair<int, int> key{static_cast<int>(x.device().type()), static_cast<int>(x.scalar_type())};
  bool known = false, ok = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = works.find(key);
    if (it != works.end()) {
      known = true;
      ok = it->second;
    }
  }
  if (!known || ok) {
    try {
      auto [mn, mx] = at::aminmax(x, 1);
      if (!known) {
        std::lock_guard<std::mutex> lock(mutex);
        works[key] = true;
      }
      return {mn, mx};
    } catch (const std::exception&) {
      std::lock_guard<std::mutex> lock(mutex);
      works[key] = false;
    }
  }
  return {x.amin(1), x.amax(1)};
}

uint64_t bitsAt(const double* values, int64_t offset) {
  uint64_t v;
  std::memcpy(&v, values + offset, sizeof v);
  return v;
}

// Device memory per element of a chunk: its gathered copy and the
// temporaries alive at once. The short formulas widen to int64 twice (the
// bits for the checksum, the NaN and Inf flags for their counts; an integer
// tensor's float64 copy); the lean ones widen the bits once (to int32 for
// 8 and 16 bits) and keep one byte of flags.
int64_t shortBytesPerElement(int64_t element_size) { return element_size + 16; }
int64_t leanBytesPerElement(int64_t element_size) { return element_size + (element_size <= 2 ? 4 : 8) + 1; }

// The widest row class that leaves a tensor of n elements min_rows rows or
// more, and fits a chunk.
int64_t widthFor(int64_t n, int64_t element_size, int64_t chunk_bytes, int64_t min_rows) {
  const int64_t widest = std::min(kWidestRow, chunk_bytes / leanBytesPerElement(element_size));
  int64_t w = kRowWidth;
  while (w * kWidthStep <= widest && n / min_rows >= w * kWidthStep) w *= kWidthStep;
  return w;
}

// A row of width W = A * B read as A blocks of B: element j = a B + c has
// checksum weight 2j + 1 = (2aB + 1) + 2c, so a row's weighed sum is the
// block sums weighed by 2aB + 1 plus the column sums weighed by 2c: two
// reductions of the row and a product over A + B values, where weighing
// each element would write an int64 per element. W is a power of 4 (1024
// times powers of 16). Made once per device and width.
at::Tensor blockWeights(const at::Device& device, int64_t a, int64_t b) {
  static std::mutex mutex;
  static auto* cache = new std::map<std::pair<std::string, int64_t>, at::Tensor>();  // never destroyed: see padsFor
  std::lock_guard<std::mutex> lock(mutex);
  at::Tensor& w = (*cache)[{device.str(), a * b}];
  if (!w.defined()) {
    // Made on the device: a copy from host memory would wait for it.
    const at::TensorOptions options = at::TensorOptions().dtype(at::kLong).device(device);
    w = at::cat({at::arange(1, 2 * a * b, 2 * b, options), at::arange(0, 2 * b, 2, options)});
  }
  return w;
}

// int32 sums of 16-bit bits hold 65,536 of them: blocks of sqrt(kWidestRow).
static_assert(kWidestRow <= (int64_t{1} << 32), "a block of 16-bit bits must sum in int32");

int64_t blockSide(int64_t width) {
  int64_t a = 1;
  while (a * a < width) a *= 2;
  return a;
}

// NaN or Inf counts per row without widening the flags to int64: a row's
// bool flags, read as bytes in runs of 128, sum into bytes (at most 128),
// and only those sums are widened.
constexpr int64_t kFlagRun = 128;

at::Tensor rowCount(const at::Tensor& flags) {
  const int64_t rows = flags.size(0), width = flags.size(1);
  return flags.view(at::kByte).view({rows, width / kFlagRun, kFlagRun}).sum(2, false, at::kByte).sum(1);
}

}  // namespace

// A run of one tensor's elements in one group: whole rows of the group's
// width and, in the kRowWidth group, a last part row.
struct RowStats::Piece {
  size_t entry;
  int64_t first, length;  // in the tensor's flat elements
};

struct RowStats::Group {
  at::ScalarType type;
  int64_t width;
  std::vector<Piece> pieces;
};

size_t RowStats::add(const at::Tensor& t) {
  Entry e;
  e.tensor = t;
  e.elements = static_cast<int64_t>(statsElements(t));
  e.floating = t.is_floating_point() || t.is_complex();
  entries_.push_back(std::move(e));
  return entries_.size() - 1;
}

at::Tensor RowStats::launch() {
  if (launched_) throw std::logic_error("RowStats::launch called twice");
  launched_ = true;
  // One group per element type (after flatElements()) and row width, in a
  // fixed order. A large tensor's whole rows of its width go to one group,
  // the rest to the kRowWidth group.
  std::map<std::pair<int, int64_t>, Group> groups;
  auto join = [&](at::ScalarType type, int64_t width, Piece piece) {
    Group& g = groups[{static_cast<int>(type), width}];
    g.type = type;
    g.width = width;
    g.pieces.push_back(piece);
  };
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].elements == 0) continue;
    const at::Tensor flat = flatElements(entries_[i].tensor);
    entries_[i].tensor = flat;
    const int64_t n = flat.numel();
    const int64_t width = widthFor(n, static_cast<int64_t>(flat.element_size()), chunk_bytes_, min_rows_);
    const int64_t wide = width > kRowWidth ? n / width * width : 0;
    if (wide > 0) join(flat.scalar_type(), width, {i, 0, wide});
    if (wide < n) join(flat.scalar_type(), kRowWidth, {i, wide, n - wide});
  }
  std::vector<at::Tensor> blocks;
  int64_t offset = 0;
  for (const auto& [key, group] : groups) launchGroup(group, blocks, offset);
  for (Entry& e : entries_) e.tensor = at::Tensor();
  if (blocks.empty()) return at::Tensor();
  // One float64 buffer: cat promotes the blocks kept in float32 or in the
  // tensors' own type by value; the integer counts are float64 already (their
  // bits, viewed).
  return at::cat(blocks);
}

void RowStats::launchGroup(const Group& group, std::vector<at::Tensor>& blocks, int64_t& offset) {
  const at::ScalarType type = group.type;
  const int64_t W = group.width;
  const bool floating = isFloating(type);
  const int64_t width = floating ? 4 : 2;  // integer values per row: [NaN, Inf,] weighted sum, plain sum
  const at::Device device = entries_[group.pieces.front().entry].tensor.device();
  const int64_t element_size = static_cast<int64_t>(c10::elementSize(type));
  // Chunks are filled to what the lean formulas fit in chunk_bytes; one
  // that the short formulas fit too takes them when it is small.
  const int64_t rows_per_chunk = std::max<int64_t>(1, chunk_bytes_ / (W * leanBytesPerElement(element_size)));

  // The chunk being gathered: its slices and the segments waiting for the
  // offsets of its block.
  std::vector<at::Tensor> slices;
  struct Placed {
    size_t entry, segment;
    int64_t first_row;  // in the chunk
  };
  std::vector<Placed> placed;
  int64_t rows = 0;

  auto emit = [&] {
    if (rows == 0) return;
    at::Tensor x = (slices.size() == 1 ? slices[0] : at::cat(slices)).view({rows, W});
    const bool lean = rows * W >= kLeanChunk || rows * W * shortBytesPerElement(element_size) > chunk_bytes_;
    // Kept in the precision they are computed in: the final concatenation
    // makes every block float64 (cat promotes), with no kernel of its own.
    at::Tensor floats, counts;
    if (floating) {
      // Sums and norms in float32 for 16-bit types (as their kernels
      // accumulate), each row's in float64 on the host.
      const at::ScalarType accumulate = (type == at::kHalf || type == at::kBFloat16) ? at::kFloat : type;
      auto [mn, mx] = rowExtremes(x);
      if (mn.scalar_type() != accumulate) {
        mn = mn.to(accumulate);
        mx = mx.to(accumulate);
      }
      // A wide row's norm by parts of kRowWidth, then over the parts: a
      // float32 sum of squares keeps the accuracy of a kRowWidth row.
      const at::Tensor parts = W == kRowWidth ? x : x.view({rows, W / kRowWidth, kRowWidth});
      at::Tensor norm = at::linalg_vector_norm(parts, 2, at::IntArrayRef{-1}, false, accumulate);
      if (W != kRowWidth) norm = at::linalg_vector_norm(norm, 2, at::IntArrayRef{1});
      floats = at::stack({mn, mx, x.sum(1, false, accumulate), norm}, 1);
    } else {
      // Integers exactly in float64 up to 2^53, as the fused pass reads them.
      const at::Tensor wide = x.to(at::kDouble);
      auto [mn, mx] = rowExtremes(wide);
      floats = at::stack({mn, mx, wide.sum(1), at::linalg_vector_norm(wide, 2, at::IntArrayRef{1})}, 1);
    }
    // The checksum, sum over i of bits(x_i) (2i + 1) mod 2^64, per row as
    // W = sum bits_j (2j + 1) and P = sum bits_j; the host adds 2 b P for a
    // row starting at element b. int64 arithmetic wraps as the sum must,
    // and the bits widen as ATen widens integers (uint8 by zeros, the others
    // by sign), in a product with int64 weights as in a sum into int64.
    const at::Tensor bits = x.view(sameWidthInteger(x.element_size()));
    at::Tensor plain, weighed, nan, inf;
    if (!lean) {
      // Fewest kernels. (A broadcast product [R, C, 2] does the two sums in
      // two kernels, but moves twice the bytes: three times slower on a
      // CPU-backed device.)
      plain = bits.sum(1, false, at::kLong);
      weighed = (bits * checksumWeights(device, W)).sum(1);
      if (floating) {
        nan = at::isnan(x).sum(1);
        inf = at::isinf(x).sum(1);
      }
    } else {
      // Fewest bytes: the bits widened once, summed by blocks and columns
      // (blockWeights); the flags summed in bytes (rowCount). Bits of 8 and
      // 16 bits widen to int32 only: a block or column holds at most 2,048
      // of them, whose sum fits.
      const int64_t a = blockSide(W), b = W / a;
      const at::ScalarType sums = x.element_size() <= 2 ? at::kInt : at::kLong;
      const at::Tensor wide = bits.scalar_type() == sums ? bits : bits.to(sums);
      const at::Tensor by_block = wide.view({rows, a, b}).sum(2, false, sums).to(at::kLong);
      const at::Tensor by_column = wide.view({rows, a, b}).sum(1, false, sums).to(at::kLong);
      plain = by_block.sum(1);
      weighed = (at::cat({by_block, by_column}, 1) * blockWeights(device, a, b)).sum(1);
      if (floating) {
        nan = rowCount(at::isnan(x));
        inf = rowCount(at::isinf(x));
      }
    }
    counts = floating ? at::stack({nan, inf, weighed, plain}, 1) : at::stack({weighed, plain}, 1);
    const int64_t floats_at = offset;
    const int64_t counts_at = floats_at + rows * 4;
    offset = counts_at + rows * width;
    blocks.push_back(floats.reshape({-1}));
    blocks.push_back(counts.view(at::kDouble).reshape({-1}));
    for (const Placed& p : placed) {
      Segment& segment = entries_[p.entry].segments[p.segment];
      segment.floats = floats_at + p.first_row * 4;
      segment.counts = counts_at + p.first_row * width;
    }
    slices.clear();
    placed.clear();
    rows = 0;
  };

  const Pads* pads = nullptr;
  for (const Piece& piece : group.pieces) {
    Entry& e = entries_[piece.entry];
    const at::Tensor flat = e.tensor.narrow(0, piece.first, piece.length);
    const int64_t whole = piece.length / W, tail = piece.length % W;
    for (int64_t row = 0; row < whole;) {
      if (rows == rows_per_chunk) emit();
      const int64_t take = std::min(whole - row, rows_per_chunk - rows);
      slices.push_back(flat.narrow(0, row * W, take * W));
      e.segments.push_back({0, 0, take, W, piece.first + row * W, Kind::Whole});
      placed.push_back({piece.entry, e.segments.size() - 1, rows});
      rows += take;
      row += take;
    }
    if (tail == 0) continue;
    // Only in the kRowWidth group: wider groups take whole rows alone.
    if (pads == nullptr) pads = &padsFor(device, type);
    const at::Tensor rest = flat.narrow(0, whole * W, tail);
    // The pads never win: zeros add nothing, the largest value is no
    // smaller than any element, the smallest no larger.
    const std::pair<Kind, const at::Tensor*> padded[] = {
        {Kind::Tail, &pads->zero}, {Kind::TailMin, &pads->high}, {Kind::TailMax, &pads->low}};
    for (const auto& [kind, pad] : padded) {
      if (rows == rows_per_chunk) emit();
      slices.push_back(rest);
      slices.push_back(pad->narrow(0, 0, W - tail));
      e.segments.push_back({0, 0, 1, W, piece.first + whole * W, kind});
      placed.push_back({piece.entry, e.segments.size() - 1, rows});
      rows += 1;
    }
  }
  emit();
}

format::Stats RowStats::stats(size_t i, const double* partials, size_t count) const {
  const Entry& e = entries_.at(i);
  format::Stats s;
  if (e.elements == 0) return s;
  double mn = std::numeric_limits<double>::infinity(), mx = -mn, sum = 0, squares = 0;
  uint64_t nan = 0, inf = 0, checksum = 0;
  const int64_t width = e.floating ? 4 : 2;
  auto check = [count](int64_t end) {
    if (end < 0 || static_cast<size_t>(end) > count) throw std::out_of_range("row statistics outside their buffer");
  };
  for (const Segment& seg : e.segments) {
    check(seg.floats + seg.rows * 4);
    check(seg.counts + seg.rows * width);
    for (int64_t r = 0; r < seg.rows; ++r) {
      const double* f = partials + seg.floats + r * 4;
      const int64_t c = seg.counts + r * width;
      // A tail's three rows: min from one, max from another, the rest from
      // the zero-padded one.
      if (seg.kind == Kind::TailMin) {
        mn = std::min(mn, f[0]);
        continue;
      }
      if (seg.kind == Kind::TailMax) {
        mx = std::max(mx, f[1]);
        continue;
      }
      if (seg.kind == Kind::Whole) {
        mn = std::min(mn, f[0]);
        mx = std::max(mx, f[1]);
      }
      sum += f[2];
      squares += f[3] * f[3];
      if (e.floating) {
        nan += bitsAt(partials, c);
        inf += bitsAt(partials, c + 1);
      }
      const uint64_t weighed = bitsAt(partials, c + width - 2), plain = bitsAt(partials, c + width - 1);
      const uint64_t first = static_cast<uint64_t>(seg.first_element + r * seg.width);
      checksum += weighed + 2 * first * plain;
    }
  }
  s.nan_count = nan;
  s.inf_count = inf;
  s.checksum = checksum;
  const double q = std::numeric_limits<double>::quiet_NaN();
  const bool has_nan = nan != 0;
  s.min = has_nan ? q : mn;
  s.max = has_nan ? q : mx;
  s.mean = has_nan ? q : sum / static_cast<double>(e.elements);
  s.norm = has_nan ? q : std::sqrt(squares);
  return s;
}

}  // namespace acc::recorder
