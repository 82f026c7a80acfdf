// The fused pass: every statistic of a CPU tensor (min, max, sum, sum of
// squares, NaN and Inf counts, checksum) in one read of its memory, where
// it lies (float32's vector pass reads it again where it holds a NaN or an
// infinity). Contiguous tensors are read straight (large ones in chunks on
// the stats pool); strided views of up to kStridedLimit elements (a
// transposed weight, a head of attention) through a small buffer, in
// row-major order, with no copy made by an op; larger views are copied by
// contiguous() first.
#include "recorder/capture/cpu/tensor_stats.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <c10/util/SmallVector.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "recorder/capture/cpu/stats_pool.h"

namespace acc::recorder {
namespace {

constexpr int64_t kGrain = 1 << 16;
// Strided views up to this many elements are read through the buffer, in
// one chunk on the calling thread; larger ones are copied and chunked.
// Gathering a transposed float32 view by columns beat contiguous() and the
// pass up to 181 x 181 (15.6 against 18.9 us) and lost at 256 x 256 (57
// against 36 us), once its rows no longer stay in cache
// (acc-micro-bench's BM_TensorStatsTransposed).
constexpr int64_t kStridedLimit = int64_t{1} << 15;
// Elements per buffer of a strided view: a multiple of 8 (the vector
// pass's step), so a view gives the same sums as its contiguous copy.
constexpr int64_t kBlock = 1024;

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

// Element `index` (row-major) of the tensor, at `p`.
template <typename T, typename Bits>
inline void accumulate(Partial& p, const T* element, uint64_t index) {
  Bits bits;
  std::memcpy(&bits, element, sizeof bits);
  p.checksum += widenBits(bits) * (2 * index + 1);
  const double v = static_cast<double>(*element);
  p.nan += v != v;
  p.inf += std::fabs(v) == std::numeric_limits<double>::infinity();
  p.min = v < p.min ? v : p.min;
  p.max = v > p.max ? v : p.max;
  p.sum += v;
  p.sumsq += v * v;
}

// The plain pass, in two independent lanes (separate locals the compiler
// keeps in registers), so consecutive additions do not wait on each other.
// Fed in pieces of even length, the last of any length: the lanes then see
// the same elements as for one piece.
template <typename T, typename Bits>
struct Lanes {
  Partial a, b;

  // p[k] is element first + k.
  void add(const T* p, int64_t first, int64_t n) {
    Partial x = a, y = b;
    int64_t k = 0;
    for (; k + 2 <= n; k += 2) {
      accumulate<T, Bits>(x, p + k, static_cast<uint64_t>(first + k));
      accumulate<T, Bits>(y, p + k + 1, static_cast<uint64_t>(first + k + 1));
    }
    if (k < n) accumulate<T, Bits>(x, p + k, static_cast<uint64_t>(first + k));
    a = x;
    b = y;
  }
  void finish(Partial& out) const {
    out.merge(a);
    out.merge(b);
  }
};

// A source of pieces: next(p, n) points p at the next n elements, false at
// the end. One piece for contiguous memory, buffers for a strided view.
struct Piece {
  const void* data;
  int64_t n;
  bool done = false;
  template <typename T>
  bool next(const T*& p, int64_t& count) {
    if (done) return false;
    done = true;
    p = static_cast<const T*>(data);
    count = n;
    return true;
  }
  void rewind() { done = false; }
};

// A strided view's elements in row-major order, kBlock at a time.
template <typename T>
class StridedReader {
 public:
  explicit StridedReader(const at::Tensor& t)
      : base_(static_cast<const T*>(t.data_ptr())),
        sizes_(t.sizes().begin(), t.sizes().end()),
        strides_(t.strides().begin(), t.strides().end()),
        index_(sizes_.size(), 0),
        numel_(t.numel()),
        left_(numel_) {}

  bool next(const T*& p, int64_t& count) {
    if (left_ == 0) return false;
    count = std::min(left_, kBlock);
    fill(buffer_, count);
    left_ -= count;
    p = buffer_;
    return true;
  }
  void rewind() {
    std::fill(index_.begin(), index_.end(), 0);
    offset_ = 0;
    left_ = numel_;
  }

 private:
  void fill(T* out, int64_t n) {
    // Rows whose elements lie side by side (attention's heads, chunks of a
    // projection) are copied whole, vectorised; decided once per buffer so
    // that the indexed loop of other views stays as the compiler made it.
    if (strides_.back() == 1) {
      fillRows<true>(out, n);
    } else {
      fillRows<false>(out, n);
    }
  }
  template <bool kUnitStride>
  void fillRows(T* out, int64_t n) {
    const size_t last = sizes_.size() - 1;
    const int64_t size = sizes_[last], stride = strides_[last];
    while (n > 0) {
      const int64_t take = std::min(n, size - index_[last]);
      const T* p = base_ + offset_ + index_[last] * stride;
      if constexpr (kUnitStride) {
        std::memcpy(out, p, static_cast<size_t>(take) * sizeof(T));
      } else {
        for (int64_t k = 0; k < take; ++k) out[k] = p[k * stride];
      }
      out += take;
      n -= take;
      index_[last] += take;
      if (index_[last] == size) {
        index_[last] = 0;
        nextRow();
      }
    }
  }
  // The next index of the outer dimensions; offset_ is theirs.
  void nextRow() {
    for (size_t d = sizes_.size() - 1; d-- > 0;) {
      offset_ += strides_[d];
      if (++index_[d] < sizes_[d]) return;
      offset_ -= strides_[d] * sizes_[d];
      index_[d] = 0;
    }
  }

  const T* base_;
  c10::SmallVector<int64_t, 6> sizes_, strides_, index_;
  int64_t offset_ = 0;
  int64_t numel_;
  int64_t left_;
  T buffer_[kBlock];
};

#if defined(__x86_64__)
bool hasAvx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

// (a * w) mod 2^64 for 64-bit a and w < 2^32, from two 32x32->64 products.
__attribute__((target("avx2"))) inline __m256i mulLow64(__m256i a, __m256i w) {
  __m256i lo = _mm256_mul_epu32(a, w);
  __m256i hi = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), w);
  return _mm256_add_epi64(lo, _mm256_slli_epi64(hi, 32));
}

__attribute__((target("avx2"))) inline uint64_t laneSum32(__m256i v) {
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  uint64_t sum = 0;
  for (uint32_t l : lanes) sum += l;
  return sum;
}

// float32, eight elements at a time: what Lanes computes, from element
// `first` on. The checksum weighs element i by 2i+1: while every weight is
// below 2^31 (kWide false), one signed 32x32->64 product per element
// (_mm256_mul_epi32 sign-extends the element's bits as the checksum does);
// beyond, the elements are widened first and multiplied in two halves.
// The NaN and Inf counts add up in 32-bit lanes (up to 2^34 elements).
// Without kCount they are not counted: a scan of finite elements (almost
// every tensor) does not need them, and they are five of the loop's two
// dozen instructions. Its sum tells: a sum in float64 of float32 values
// cannot overflow, so it is finite exactly when every element is. Where it
// is not, the scan returns false having written nothing, and the caller
// rewinds the source and scans again with kCount.
template <bool kWide, bool kCount, typename Source>
__attribute__((target("avx2,fma"))) bool scanFloatAvx2(Source& source, int64_t first, Partial& out) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  __m256 mn = inf, mx = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256d sum0 = _mm256_setzero_pd(), sum1 = sum0, sq0 = sum0, sq1 = sum0;
  __m256i checksum = _mm256_setzero_si256(), nans = checksum, infs = checksum;
  const int64_t w = 2 * first + 1;
  // kWide: the weights of elements 0-3 and 4-7 of a step; otherwise those
  // of elements 0, 2, 4, 6 and 1, 3, 5, 7 (the even and odd 32-bit lanes).
  __m256i w0 = kWide ? _mm256_set_epi64x(w + 6, w + 4, w + 2, w) : _mm256_set_epi64x(w + 12, w + 8, w + 4, w);
  __m256i w1 = kWide ? _mm256_set_epi64x(w + 14, w + 12, w + 10, w + 8)
                     : _mm256_set_epi64x(w + 14, w + 10, w + 6, w + 2);
  const __m256i w_step = _mm256_set1_epi64x(16);
  Lanes<float, uint32_t> tail;
  int64_t index = first;
  const float* data;
  int64_t n;
  while (source.next(data, n)) {
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
      __m256 v = _mm256_loadu_ps(data + k);
      if constexpr (kCount) {
        nans = _mm256_sub_epi32(nans, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
        infs = _mm256_sub_epi32(infs, _mm256_castps_si256(_mm256_cmp_ps(_mm256_and_ps(v, abs_mask), inf, _CMP_EQ_OQ)));
      }
      mn = _mm256_min_ps(v, mn);  // a NaN in v keeps mn: NaNs are counted instead
      mx = _mm256_max_ps(v, mx);
      __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
      __m256d d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
      sum0 = _mm256_add_pd(sum0, d0);
      sum1 = _mm256_add_pd(sum1, d1);
      sq0 = _mm256_fmadd_pd(d0, d0, sq0);
      sq1 = _mm256_fmadd_pd(d1, d1, sq1);
      __m256i bits = _mm256_castps_si256(v);
      if constexpr (kWide) {
        __m256i b0 = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(bits));
        __m256i b1 = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(bits, 1));
        checksum = _mm256_add_epi64(checksum, _mm256_add_epi64(mulLow64(b0, w0), mulLow64(b1, w1)));
      } else {
        checksum = _mm256_add_epi64(checksum, _mm256_mul_epi32(bits, w0));
        checksum = _mm256_add_epi64(checksum, _mm256_mul_epi32(_mm256_srli_epi64(bits, 32), w1));
      }
      w0 = _mm256_add_epi64(w0, w_step);
      w1 = _mm256_add_epi64(w1, w_step);
    }
    if (k < n) tail.add(data + k, index + k, n - k);  // only the last piece ends off a step
    index += n;
  }
  alignas(32) float mins[8], maxs[8];
  alignas(32) double sums[4], squares[4];
  alignas(32) uint64_t checks[4];
  _mm256_store_ps(mins, mn);
  _mm256_store_ps(maxs, mx);
  _mm256_store_pd(sums, _mm256_add_pd(sum0, sum1));
  _mm256_store_pd(squares, _mm256_add_pd(sq0, sq1));
  _mm256_store_si256(reinterpret_cast<__m256i*>(checks), checksum);
  Partial vec;
  for (int l = 0; l < 4; ++l) {
    vec.sum += sums[l];
    vec.sumsq += squares[l];
    vec.checksum += checks[l];
  }
  if (!kCount && !std::isfinite(vec.sum)) return false;
  for (int l = 0; l < 8; ++l) {
    vec.min = std::min(vec.min, static_cast<double>(mins[l]));
    vec.max = std::max(vec.max, static_cast<double>(maxs[l]));
  }
  if constexpr (kCount) {
    vec.nan = laneSum32(nans);
    vec.inf = laneSum32(infs);
  }
  out.merge(vec);
  tail.finish(out);
  return true;
}

// The vector scan, again with the counts where its elements are not all
// finite (the source rewound to its start).
template <bool kWide, typename Source>
void scanFloatAvx2Counted(Source& source, int64_t first, Partial& out) {
  if (scanFloatAvx2<kWide, false>(source, first, out)) return;
  source.rewind();
  scanFloatAvx2<kWide, true>(source, first, out);
}
#endif

// Elements first, first+1, ... from `source`, into `out`.
template <typename T, typename Bits, typename Source>
void scanPieces(Source& source, int64_t first, int64_t end, Partial& out) {
#if defined(__x86_64__)
  if constexpr (std::is_same_v<T, float>) {
    if (hasAvx2()) {
      if (end <= (int64_t{1} << 30)) return scanFloatAvx2Counted<false>(source, first, out);
      if (end < (int64_t{1} << 31)) return scanFloatAvx2Counted<true>(source, first, out);
    }
  }
#endif
  Lanes<T, Bits> lanes;
  const T* p;
  int64_t n;
  int64_t index = first;
  while (source.next(p, n)) {
    lanes.add(p, index, n);
    index += n;
  }
  lanes.finish(out);
}

template <typename T, typename Bits>
void scanChunk(const T* data, int64_t begin, int64_t end, Partial& out) {
  Piece piece{data + begin, end - begin};
  scanPieces<T, Bits>(piece, begin, end, out);
}

// The pass into deviceStats()'s layout (min, max, sum, sum of squares, then
// the NaN and Inf counts and the checksum as the bits of float64 values);
// all zero when it is empty, as deviceStats().
template <typename T, typename Bits>
void fused(const at::Tensor& t, double* out) {
  const int64_t n = t.numel();
  Partial all;
  if (!t.is_contiguous()) {
    StridedReader<T> reader(t);
    scanPieces<T, Bits>(reader, 0, n, all);
  } else if (n <= kGrain) {
    // Most tensors: one chunk, scanned here with nothing to allocate.
    scanChunk<T, Bits>(static_cast<const T*>(t.data_ptr()), 0, n, all);
  } else {
    const T* data = static_cast<const T*>(t.data_ptr());
    const int64_t chunks = (n + kGrain - 1) / kGrain;
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

// Whether the pass reads `t` where it lies: contiguous, or a view small
// enough for the buffer to beat a copy.
bool readWhereItLies(const at::Tensor& t) { return t.is_contiguous() || t.numel() <= kStridedLimit; }

}  // namespace

void fusedStatsInto(const at::Tensor& cpu_tensor, double* out) {
  at::Tensor t = cpu_tensor.is_complex() ? at::view_as_real(cpu_tensor) : cpu_tensor;
  if (!readWhereItLies(t)) t = t.contiguous();
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
  return t.device().is_cpu() && t.layout() == at::kStrided && readWhereItLies(t) &&
         withScanType(t.scalar_type(), [](auto) {});
}

}  // namespace acc::recorder
