#include "recorder/capture/cpu/tensor_stats.h"

#include "recorder/capture/capture_guard.h"
#include "recorder/per_thread.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <cstdint>
#include <cstring>
#include <limits>

namespace acc::recorder {

at::ScalarType sameWidthInteger(size_t bytes) {
  switch (bytes) {
    case 1: return at::kByte;
    case 2: return at::kShort;
    case 4: return at::kInt;
    default: return at::kLong;
  }
}

namespace {

// Elements per block of the two-level sum: blocks are summed on the device in
// the tensor's precision (float for half and bfloat16), the block sums in
// float64, so the mean keeps about float64's accuracy without a float64 copy.
constexpr int64_t kSumBlock = 1024;
// Elements per checksum chunk: bounds the int64 temporary to 8 bytes per
// element of one chunk, whatever the tensor's size.
constexpr int64_t kChecksumChunk = int64_t{1} << 20;

// A flat tensor as its whole blocks of kSumBlock elements ([k, kSumBlock])
// and the tail that fills no block; either may be empty.
struct Blocks {
  at::Tensor whole, tail;
};

Blocks splitBlocks(const at::Tensor& flat) {
  const int64_t n = flat.numel();
  const int64_t whole = n - n % kSumBlock;
  return {flat.narrow(0, 0, whole).view({-1, kSumBlock}), flat.narrow(0, whole, n - whole)};
}

// The sum of two partial results, either of which may be undefined: no
// kernel is spent on a zero to start from.
at::Tensor plus(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined()) return b;
  return b.defined() ? a.add(b) : a;
}

at::Tensor blockSum(const at::Tensor& flat, at::ScalarType accumulate) {
  const Blocks b = splitBlocks(flat);
  at::Tensor total;
  if (b.whole.numel() > 0) total = b.whole.sum(1, false, accumulate).sum(at::kDouble);
  if (b.tail.numel() > 0) total = plus(total, b.tail.sum(at::kDouble));
  return total;
}

// The sum of squares the same way: block norms in the accumulation
// precision, their squares summed in float64.
at::Tensor blockSquares(const at::Tensor& flat, at::ScalarType accumulate) {
  const Blocks b = splitBlocks(flat);
  at::Tensor squares;
  if (b.whole.numel() > 0) {
    at::Tensor norms = at::linalg_vector_norm(b.whole, 2, at::IntArrayRef{1}, false, accumulate).to(at::kDouble);
    squares = norms.mul(norms).sum();
  }
  if (b.tail.numel() > 0) {
    at::Tensor tail = at::linalg_vector_norm(b.tail, 2, {}, false, accumulate).to(at::kDouble);
    squares = plus(squares, tail.mul(tail));
  }
  return squares;
}

at::Tensor checksumOf(const at::Tensor& flat) {
  const int64_t n = flat.numel();
  at::Tensor bits = flat.view(sameWidthInteger(flat.element_size()));
  at::Tensor sum;
  for (int64_t begin = 0; begin < n; begin += kChecksumChunk) {
    const int64_t len = std::min(kChecksumChunk, n - begin);
    at::Tensor weights = checksumWeights(flat.device(), len);
    // Widened into a copy of its own (for 8-byte dtypes the integer view
    // shares the caller's memory), then weighed in place: one int64
    // temporary. Wrapping int64 arithmetic is the checksum's mod 2^64.
    at::Tensor chunk = bits.narrow(0, begin, len).to(at::kLong, /*non_blocking=*/false, /*copy=*/true);
    at::Tensor plain_sum = begin > 0 ? chunk.sum() : at::Tensor();
    at::Tensor part = chunk.mul_(weights).sum();
    if (begin > 0) part = part.add(plain_sum.mul(2 * begin));
    sum = plus(sum, part);
  }
  return sum;
}

// Tensors of at most this many elements are read as one float64 copy (8 MiB
// at most), where each statistic is one kernel: on a device a small
// tensor's statistics cost what their kernel launches cost. Larger floating
// tensors are summed in blocks in their own precision, without the copy.
constexpr int64_t kWidenLimit = kChecksumChunk;

}  // namespace

// The checksum weights 1, 3, 5, ... for one chunk, made once per device and
// kept (8 MiB at most per device): a chunk starting at element b weighs
// element b+i by (2i+1) + 2b, so one tensor serves every chunk.
at::Tensor checksumWeights(const at::Device& device, int64_t len) {
  static std::mutex mutex;
  // Never destroyed: a device tensor must not be freed by a static
  // destructor after the device's runtime has shut down.
  static auto* cache = new std::map<std::string, at::Tensor>();
  std::lock_guard<std::mutex> lock(mutex);
  at::Tensor& w = (*cache)[device.str()];
  if (!w.defined() || w.numel() < len) {
    const int64_t size = std::max<int64_t>(len, std::min<int64_t>(kChecksumChunk, int64_t{1} << 16));
    w = at::arange(1, 2 * size + 1, 2, at::TensorOptions().dtype(at::kLong).device(device));
  }
  return w.narrow(0, 0, len);
}

at::Tensor deviceStats(const at::Tensor& tensor) {
  at::Tensor t = tensor.is_complex() ? at::view_as_real(tensor) : tensor;
  at::Tensor flat = t.reshape({-1});
  const int64_t n = flat.numel();
  if (n == 0) return at::zeros({kDeviceStatsSize}, flat.options().dtype(at::kDouble));
  const bool floating = flat.is_floating_point();
  at::Tensor min, max, sum, squares;
  if (!floating || n <= kWidenLimit) {
    // Integer and bool tensors (indices, masks, labels) are taken exactly in
    // float64 whatever their size; a float64 tensor is read as it is.
    at::Tensor values = flat.to(at::kDouble);
    min = values.min();
    max = values.max();
    sum = values.sum();
    squares = at::dot(values, values);
  } else {
    const bool low = flat.scalar_type() == at::kHalf || flat.scalar_type() == at::kBFloat16;
    const at::ScalarType accumulate = low ? at::kFloat : flat.scalar_type();
    // min() and max(), not aminmax(): torch 1.13 has no CPU aminmax for half.
    min = flat.min().to(at::kDouble);
    max = flat.max().to(at::kDouble);
    sum = blockSum(flat, accumulate);
    squares = blockSquares(flat, accumulate);
  }
  at::Tensor nans, infs;
  if (floating) {
    nans = at::isnan(flat).sum();
    infs = at::isinf(flat).sum();
  } else {
    nans = infs = at::zeros({}, flat.options().dtype(at::kLong));
  }
  // Functional results gathered by one kernel into one buffer, so one copy
  // brings everything back; the counts travel as the bits of float64
  // values. (Out= kernels writing slots of one buffer saved two launches
  // more but corrupted the test device's heap now and then: stop 18.)
  return at::stack({min, max, sum, squares, nans.view(at::kDouble), infs.view(at::kDouble),
                    checksumOf(flat).view(at::kDouble)});
}

uint64_t statsElements(const at::Tensor& t) {
  return static_cast<uint64_t>(t.numel()) * (t.is_complex() ? 2 : 1);
}

uint64_t statsElements(const format::Tensor& t) {
  const bool complex = t.dtype == format::Dtype::Complex64 || t.dtype == format::Dtype::Complex128;
  return t.numel() * (complex ? 2 : 1);
}

format::Stats statsFromBuffer(const double* r, uint64_t elements) {
  format::Stats s;
  uint64_t counts[3];
  std::memcpy(counts, r + 4, sizeof counts);
  s.nan_count = counts[0];
  s.inf_count = counts[1];
  s.checksum = counts[2];
  const double q = std::numeric_limits<double>::quiet_NaN();
  const bool nan = s.nan_count != 0;
  s.min = nan ? q : r[0];
  s.max = nan ? q : r[1];
  s.mean = nan ? q : elements > 0 ? r[2] / static_cast<double>(elements) : 0.0;
  s.norm = nan ? q : std::sqrt(r[3]);
  return s;
}

format::Stats statsFromBuffer(const at::Tensor& host, uint64_t elements) {
  return statsFromBuffer(host.contiguous().data_ptr<double>(), elements);
}

namespace {

// One element holding `value` as `dtype` holds it (0.1 in bfloat16, 1.5 in
// an int), with the fused pass's own reading of it; nullopt where the type
// refuses the value (the op itself refused it). Kept per thread for the
// last few (value, type) pairs: fills repeat the same few values (zero_ of
// every gradient), and making the element is an op, under a guard that on
// torch 1.13 and 2.x copies and rebuilds the thread's callback list twice.
std::optional<format::Stats> elementStats(double value, at::ScalarType dtype) {
  struct Entry {
    uint64_t bits = 0;
    at::ScalarType dtype = at::ScalarType::Undefined;
    std::optional<format::Stats> stats;
  };
  constexpr size_t kEntries = 8;
  struct Recent {  // on the heap (per_thread.h): 640 bytes
    Entry entries[kEntries];
    size_t next = 0;
  };
  Recent* recent = PerThread<Recent>::get();
  Entry spare;  // a thread at its exit: nothing kept
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  if (recent != nullptr) {
    for (const Entry& e : recent->entries) {
      if (e.dtype == dtype && e.bits == bits) return e.stats;
    }
  }
  Entry& e = recent != nullptr ? recent->entries[recent->next] : spare;
  if (recent != nullptr) recent->next = (recent->next + 1) % kEntries;
  e.bits = bits;
  e.dtype = dtype;
  e.stats.reset();
  CaptureGuard guard;
  try {
    e.stats = tensorStatsFused(at::scalar_tensor(value, at::TensorOptions().dtype(dtype)));
  } catch (const std::exception&) {
    // not a value of this type: kept as such, nullopt
  }
  return e.stats;
}

}  // namespace

std::optional<format::Stats> constantStats(double value, at::ScalarType dtype, uint64_t elements) {
  if (at::isComplexType(dtype) || dtypeOf(dtype) == format::Dtype::Unknown) return std::nullopt;
  const std::optional<format::Stats> one = elementStats(value, dtype);
  if (!one) return std::nullopt;
  const format::Stats& element = *one;
  // A finite value the type rounds to infinity (3e38 in half): some torch
  // versions refuse it in full() and fill_(), others store inf. Leave such
  // a fill to the kernels, which see what the op really stored.
  if (std::isfinite(value) && element.inf_count != 0) return std::nullopt;
  format::Stats s;
  if (elements == 0) return s;
  const double n = static_cast<double>(elements);
  s.nan_count = element.nan_count * elements;
  s.inf_count = element.inf_count * elements;
  // sum over i < n of bits (2i + 1) = bits n^2 (mod 2^64); one element's
  // checksum is its bits.
  s.checksum = element.checksum * elements * elements;
  s.min = element.min;
  s.max = element.max;
  s.mean = element.mean;
  s.norm = std::isnan(element.norm) ? element.norm : std::fabs(element.min) * std::sqrt(n);
  return s;
}

format::Stats tensorStatsAten(const at::Tensor& tensor) {
  const uint64_t elements = statsElements(tensor);
  return statsFromBuffer(deviceStats(tensor).cpu(), elements);
}

format::Stats tensorStats(const at::Tensor& t) {
  if (t.device().is_cpu() && t.layout() == at::kStrided) return tensorStatsFused(t);
  return tensorStatsAten(t);
}

}  // namespace acc::recorder
