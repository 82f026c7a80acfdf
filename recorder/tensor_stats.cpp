#include "recorder/tensor_stats.h"

#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace acc::recorder {
namespace {

constexpr int64_t kGrain = 1 << 16;

struct Partial {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0, sumsq = 0;
  uint64_t nan = 0, inf = 0, checksum = 0;
  bool saw_nan = false;
};

template <typename Bits>
uint64_t widenBits(Bits b) {
  // Sign-extend like ATen's integer conversion to int64, except for bytes,
  // which ATen handles as uint8.
  if constexpr (sizeof(Bits) == 1) return static_cast<uint8_t>(b);
  else return static_cast<uint64_t>(static_cast<int64_t>(static_cast<std::make_signed_t<Bits>>(b)));
}

struct Lane {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0, sumsq = 0;
  uint64_t nan = 0, inf = 0, checksum = 0;
};

template <typename T, typename Bits>
inline void accumulate(Lane& lane, const T* data, int64_t i) {
  Bits bits;
  std::memcpy(&bits, &data[i], sizeof bits);
  lane.checksum += widenBits(bits) * (2 * static_cast<uint64_t>(i) + 1);
  const double v = static_cast<double>(data[i]);
  lane.nan += v != v;
  lane.inf += std::fabs(v) == std::numeric_limits<double>::infinity();
  lane.min = v < lane.min ? v : lane.min;
  lane.max = v > lane.max ? v : lane.max;
  lane.sum += v;
  lane.sumsq += v * v;
}

// One pass over [begin, end) in two independent lanes (two separate
// locals the compiler keeps in registers), so consecutive additions do not
// wait on each other. NaNs are counted here; they override min/max/mean/norm
// when the partials are combined.
template <typename T, typename Bits>
void scan(const T* data, int64_t begin, int64_t end, Partial& out) {
  Lane a, b;
  int64_t i = begin;
  for (; i + 2 <= end; i += 2) {
    accumulate<T, Bits>(a, data, i);
    accumulate<T, Bits>(b, data, i + 1);
  }
  if (i < end) accumulate<T, Bits>(a, data, i);
  for (const Lane* l : {&a, &b}) {
    out.min = std::min(out.min, l->min);
    out.max = std::max(out.max, l->max);
    out.sum += l->sum;
    out.sumsq += l->sumsq;
    out.nan += l->nan;
    out.inf += l->inf;
    out.checksum += l->checksum;
  }
  out.saw_nan = out.nan != 0;
}

template <typename T, typename Bits>
format::Stats fused(const at::Tensor& t) {
  const T* data = static_cast<const T*>(t.data_ptr());
  const int64_t n = t.numel();
  const int64_t chunks = (n + kGrain - 1) / kGrain;
  std::vector<Partial> parts(static_cast<size_t>(chunks));
  // Partials are combined in chunk order, so results do not depend on the
  // number of threads.
  at::parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      scan<T, Bits>(data, c * kGrain, std::min(n, (c + 1) * kGrain), parts[static_cast<size_t>(c)]);
    }
  });
  Partial all;
  for (const Partial& p : parts) {
    all.min = std::min(all.min, p.min);
    all.max = std::max(all.max, p.max);
    all.sum += p.sum;
    all.sumsq += p.sumsq;
    all.nan += p.nan;
    all.inf += p.inf;
    all.checksum += p.checksum;
    all.saw_nan |= p.saw_nan;
  }
  format::Stats s;
  s.nan_count = all.nan;
  s.inf_count = all.inf;
  s.checksum = all.checksum;
  if (n == 0) return s;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  s.min = all.saw_nan ? nan : all.min;
  s.max = all.saw_nan ? nan : all.max;
  s.mean = all.saw_nan ? nan : all.sum / static_cast<double>(n);
  s.norm = all.saw_nan ? nan : std::sqrt(all.sumsq);
  return s;
}

at::ScalarType sameWidthInteger(size_t bytes) {
  switch (bytes) {
    case 1: return at::kByte;
    case 2: return at::kShort;
    case 4: return at::kInt;
    default: return at::kLong;
  }
}

}  // namespace

format::Dtype dtypeOf(at::ScalarType type) {
  using D = format::Dtype;
  switch (type) {
    case at::kBool: return D::Bool;
    case at::kByte: return D::UInt8;
    case at::kChar: return D::Int8;
    case at::kShort: return D::Int16;
    case at::kInt: return D::Int32;
    case at::kLong: return D::Int64;
    case at::kHalf: return D::Float16;
    case at::kBFloat16: return D::BFloat16;
    case at::kFloat: return D::Float32;
    case at::kDouble: return D::Float64;
    case at::kComplexFloat: return D::Complex64;
    case at::kComplexDouble: return D::Complex128;
    default: return D::Unknown;
  }
}

format::Stats tensorStatsFused(const at::Tensor& cpu_tensor) {
  at::Tensor t = cpu_tensor.is_complex() ? at::view_as_real(cpu_tensor) : cpu_tensor;
  t = t.contiguous();
  switch (t.scalar_type()) {
    case at::kFloat: return fused<float, uint32_t>(t);
    case at::kDouble: return fused<double, uint64_t>(t);
    case at::kHalf: return fused<c10::Half, uint16_t>(t);
    case at::kBFloat16: return fused<c10::BFloat16, uint16_t>(t);
    case at::kBool: return fused<bool, uint8_t>(t);
    case at::kByte: return fused<uint8_t, uint8_t>(t);
    case at::kChar: return fused<int8_t, uint8_t>(t);
    case at::kShort: return fused<int16_t, uint16_t>(t);
    case at::kInt: return fused<int32_t, uint32_t>(t);
    case at::kLong: return fused<int64_t, uint64_t>(t);
    default: return tensorStatsAten(t);
  }
}

format::Stats tensorStatsAten(const at::Tensor& tensor) {
  format::Stats s;
  at::Tensor t = tensor.is_complex() ? at::view_as_real(tensor) : tensor;
  t = t.contiguous();
  const int64_t n = t.numel();
  if (n == 0) return s;
  at::Tensor flat = t.reshape({-1});
  // Out of place throughout: for 8-byte dtypes the integer view shares the
  // caller's memory.
  at::Tensor bits = flat.view(sameWidthInteger(flat.element_size())).to(at::kLong);
  at::Tensor weights = at::arange(n, flat.options().dtype(at::kLong)).mul_(2).add_(1);
  at::Tensor checksum = at::mul(bits, weights).sum();
  at::Tensor values = flat.to(at::kDouble);
  at::Tensor counts = at::stack({at::isnan(values).sum(), at::isinf(values).sum(), checksum});
  at::Tensor reals = at::stack({values.min(), values.max(), values.mean(), values.norm()});
  counts = counts.cpu();
  reals = reals.cpu();
  const int64_t* c = counts.data_ptr<int64_t>();
  const double* r = reals.data_ptr<double>();
  s.nan_count = static_cast<uint64_t>(c[0]);
  s.inf_count = static_cast<uint64_t>(c[1]);
  s.checksum = static_cast<uint64_t>(c[2]);
  s.min = r[0];
  s.max = r[1];
  s.mean = r[2];
  s.norm = r[3];
  return s;
}

format::Stats tensorStats(const at::Tensor& t) {
  if (t.device().is_cpu() && t.layout() == at::kStrided) return tensorStatsFused(t);
  return tensorStatsAten(t);
}

}  // namespace acc::recorder
