#include "recorder/capture/cpu/tensor_stats.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "recorder/capture/cpu/stats_pool.h"

namespace acc::recorder {
namespace {

constexpr int64_t kGrain = 1 << 16;

// Statistics of a part of a tensor: a lane of a loop, a chunk, the whole.
// NaNs are only counted here; they override min/max/mean/norm at the end.
struct Partial {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0, sumsq = 0;
  uint64_t nan = 0, inf = 0, checksum = 0;

  void merge(const Partial& o) {
    min = std::min(min, o.min);
    max = std::max(max, o.max);
    sum += o.sum;
    sumsq += o.sumsq;
    nan += o.nan;
    inf += o.inf;
    checksum += o.checksum;
  }
};

template <typename Bits>
uint64_t widenBits(Bits b) {
  // Sign-extend like ATen's integer conversion to int64, except for bytes,
  // which ATen handles as uint8.
  if constexpr (sizeof(Bits) == 1) return static_cast<uint8_t>(b);
  else return static_cast<uint64_t>(static_cast<int64_t>(static_cast<std::make_signed_t<Bits>>(b)));
}

template <typename T, typename Bits>
inline void accumulate(Partial& p, const T* data, int64_t i) {
  Bits bits;
  std::memcpy(&bits, &data[i], sizeof bits);
  p.checksum += widenBits(bits) * (2 * static_cast<uint64_t>(i) + 1);
  const double v = static_cast<double>(data[i]);
  p.nan += v != v;
  p.inf += std::fabs(v) == std::numeric_limits<double>::infinity();
  p.min = v < p.min ? v : p.min;
  p.max = v > p.max ? v : p.max;
  p.sum += v;
  p.sumsq += v * v;
}

// One pass over [begin, end) in two independent lanes (separate locals the
// compiler keeps in registers), so consecutive additions do not wait on
// each other.
template <typename T, typename Bits>
void scan(const T* data, int64_t begin, int64_t end, Partial& out) {
  Partial a, b;
  int64_t i = begin;
  for (; i + 2 <= end; i += 2) {
    accumulate<T, Bits>(a, data, i);
    accumulate<T, Bits>(b, data, i + 1);
  }
  if (i < end) accumulate<T, Bits>(a, data, i);
  out.merge(a);
  out.merge(b);
}

#if defined(__x86_64__)
// (a * w) mod 2^64 for 64-bit a and w < 2^32, from two 32x32->64 products.
__attribute__((target("avx2"))) inline __m256i mulLow64(__m256i a, __m256i w) {
  __m256i lo = _mm256_mul_epu32(a, w);
  __m256i hi = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), w);
  return _mm256_add_epi64(lo, _mm256_slli_epi64(hi, 32));
}

// float32, eight elements at a time: what scan() computes. Only for indices
// below 2^31, where the checksum weights 2i+1 fit in 32 bits.
__attribute__((target("avx2,fma"))) void scanFloatAvx2(const float* data, int64_t begin,
                                                      int64_t end, Partial& out) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  __m256 mn = inf, mx = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256d sum0 = _mm256_setzero_pd(), sum1 = sum0, sq0 = sum0, sq1 = sum0;
  __m256i checksum = _mm256_setzero_si256();
  const int64_t w = 2 * begin + 1;
  __m256i w_lo = _mm256_set_epi64x(w + 6, w + 4, w + 2, w);
  __m256i w_hi = _mm256_set_epi64x(w + 14, w + 12, w + 10, w + 8);
  const __m256i w_step = _mm256_set1_epi64x(16);
  Partial vec;
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    __m256 v = _mm256_loadu_ps(data + i);
    vec.nan += __builtin_popcount(_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    vec.inf += __builtin_popcount(
        _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(v, abs_mask), inf, _CMP_EQ_OQ)));
    mn = _mm256_min_ps(v, mn);  // a NaN in v keeps mn: NaNs are counted instead
    mx = _mm256_max_ps(v, mx);
    __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    __m256d d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    sum0 = _mm256_add_pd(sum0, d0);
    sum1 = _mm256_add_pd(sum1, d1);
    sq0 = _mm256_fmadd_pd(d0, d0, sq0);
    sq1 = _mm256_fmadd_pd(d1, d1, sq1);
    __m256i bits = _mm256_castps_si256(v);
    __m256i b0 = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(bits));
    __m256i b1 = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(bits, 1));
    checksum = _mm256_add_epi64(checksum, _mm256_add_epi64(mulLow64(b0, w_lo), mulLow64(b1, w_hi)));
    w_lo = _mm256_add_epi64(w_lo, w_step);
    w_hi = _mm256_add_epi64(w_hi, w_step);
  }
  alignas(32) float mins[8], maxs[8];
  alignas(32) double sums[4], squares[4];
  alignas(32) uint64_t checks[4];
  _mm256_store_ps(mins, mn);
  _mm256_store_ps(maxs, mx);
  _mm256_store_pd(sums, _mm256_add_pd(sum0, sum1));
  _mm256_store_pd(squares, _mm256_add_pd(sq0, sq1));
  _mm256_store_si256(reinterpret_cast<__m256i*>(checks), checksum);
  for (int l = 0; l < 8; ++l) {
    vec.min = std::min(vec.min, static_cast<double>(mins[l]));
    vec.max = std::max(vec.max, static_cast<double>(maxs[l]));
  }
  for (int l = 0; l < 4; ++l) {
    vec.sum += sums[l];
    vec.sumsq += squares[l];
    vec.checksum += checks[l];
  }
  out.merge(vec);
  if (i < end) scan<float, uint32_t>(data, i, end, out);
}

bool hasAvx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}
#endif

template <typename T, typename Bits>
void scanChunk(const T* data, int64_t begin, int64_t end, Partial& out) {
#if defined(__x86_64__)
  if constexpr (std::is_same_v<T, float>) {
    if (hasAvx2() && end < (int64_t{1} << 31)) return scanFloatAvx2(data, begin, end, out);
  }
#endif
  scan<T, Bits>(data, begin, end, out);
}

// The pass over a contiguous tensor, into deviceStats()'s layout (min, max,
// sum, sum of squares, then the NaN and Inf counts and the checksum as the
// bits of float64 values); all zero when it is empty, as deviceStats().
template <typename T, typename Bits>
void fused(const at::Tensor& t, double* out) {
  const T* data = static_cast<const T*>(t.data_ptr());
  const int64_t n = t.numel();
  const int64_t chunks = (n + kGrain - 1) / kGrain;
  Partial all;
  if (chunks <= 1) {
    // Most tensors: one chunk, scanned here with nothing to allocate.
    scanChunk<T, Bits>(data, 0, n, all);
  } else {
    std::vector<Partial> parts(static_cast<size_t>(chunks));
    // Partials are merged in chunk order, so results do not depend on the
    // number of threads.
    StatsPool::shared().run(chunks, [&](int64_t c) {
      scanChunk<T, Bits>(data, c * kGrain, std::min(n, (c + 1) * kGrain), parts[static_cast<size_t>(c)]);
    });
    for (const Partial& p : parts) all.merge(p);
  }
  if (n == 0) all.min = all.max = 0;
  const double values[4] = {all.min, all.max, all.sum, all.sumsq};
  const uint64_t counts[3] = {all.nan, all.inf, all.checksum};
  std::memcpy(out, values, sizeof values);
  std::memcpy(out + 4, counts, sizeof counts);
}

template <typename T, typename B>
struct ScanType {
  using Element = T;
  using Bits = B;  // the unsigned integer of the element's width, for the checksum
};

// Calls f(ScanType<...>{}) for the element types the fused pass scans;
// false (f not called) for the others, which go to ATen.
template <typename F>
bool withScanType(at::ScalarType type, F&& f) {
  switch (type) {
    case at::kFloat: f(ScanType<float, uint32_t>{}); return true;
    case at::kDouble: f(ScanType<double, uint64_t>{}); return true;
    case at::kHalf: f(ScanType<c10::Half, uint16_t>{}); return true;
    case at::kBFloat16: f(ScanType<c10::BFloat16, uint16_t>{}); return true;
    case at::kBool: f(ScanType<bool, uint8_t>{}); return true;
    case at::kByte: f(ScanType<uint8_t, uint8_t>{}); return true;
    case at::kChar: f(ScanType<int8_t, uint8_t>{}); return true;
    case at::kShort: f(ScanType<int16_t, uint16_t>{}); return true;
    case at::kInt: f(ScanType<int32_t, uint32_t>{}); return true;
    case at::kLong: f(ScanType<int64_t, uint64_t>{}); return true;
    default: return false;
  }
}


}  // namespace

at::ScalarType sameWidthInteger(size_t bytes) {
  switch (bytes) {
    case 1: return at::kByte;
    case 2: return at::kShort;
    case 4: return at::kInt;
    default: return at::kLong;
  }
}

void fusedStatsInto(const at::Tensor& cpu_tensor, double* out) {
  at::Tensor t = cpu_tensor.is_complex() ? at::view_as_real(cpu_tensor) : cpu_tensor;
  t = t.contiguous();
  const bool scanned = withScanType(t.scalar_type(), [&](auto type) {
    fused<typename decltype(type)::Element, typename decltype(type)::Bits>(t, out);
  });
  if (!scanned) {
    const at::Tensor buffer = deviceStats(t).contiguous();
    std::memcpy(out, buffer.data_ptr<double>(), kDeviceStatsSize * sizeof(double));
  }
}

format::Stats tensorStatsFused(const at::Tensor& cpu_tensor) {
  double buffer[kDeviceStatsSize];
  fusedStatsInto(cpu_tensor, buffer);
  return statsFromBuffer(buffer, statsElements(cpu_tensor));
}

bool statsReadInPlace(const at::Tensor& t) {
  return t.device().is_cpu() && t.layout() == at::kStrided && t.is_contiguous() &&
         withScanType(t.scalar_type(), [](auto) {});
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

std::optional<format::Stats> constantStats(double value, at::ScalarType dtype, uint64_t elements) {
  if (at::isComplexType(dtype) || dtypeOf(dtype) == format::Dtype::Unknown) return std::nullopt;
  // One element as the type holds it (0.1 in bfloat16, 1.5 in an int),
  // with the fused pass's own reading of it.
  at::Tensor one;
  try {
    one = at::scalar_tensor(value, at::TensorOptions().dtype(dtype));
  } catch (const std::exception&) {
    return std::nullopt;  // not a value of this type (the op itself refused it)
  }
  format::Stats element = tensorStatsFused(one);
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
