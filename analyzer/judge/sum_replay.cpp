#include "analyzer/judge/sum_replay.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "analyzer/common/elements.h"

namespace acc::analyzer {
namespace {

bool readable(const format::Tensor& t) {
  return t.has_data && isFloating(t.dtype) && !isComplex(t.dtype) &&
         t.data.size() == t.numel() * realBytes(t.dtype);
}

// `whole`'s shape ends with `part`'s (leading ones of `part` aside).
bool endsWith(const std::vector<int64_t>& whole, const std::vector<int64_t>& part) {
  size_t first = 0;
  while (first < part.size() && part[first] == 1) ++first;
  const size_t n = part.size() - first;
  if (n > whole.size()) return false;
  return std::equal(part.begin() + static_cast<std::ptrdiff_t>(first), part.end(),
                    whole.end() - static_cast<std::ptrdiff_t>(n));
}

// `x` rounded to nearest even in a binary format of `f.digits` significand
// bits: what a kernel that sums in a wider type stores.
double roundTo(double x, FloatFormat f) {
  if (f.digits == 0 || f.digits >= 53 || x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  std::frexp(x, &e);
  // Subnormals keep fewer bits; above the largest finite value is infinity.
  const int bits = f.digits - std::max(0, f.min_exponent - e);
  const double r = std::ldexp(std::nearbyint(std::ldexp(x, bits - e)), e - bits);
  const int max_exponent = 3 - f.min_exponent;  // IEEE formats: 128 for float32 and bfloat16, 16 for float16
  const double largest = std::ldexp(1.0 - std::ldexp(1.0, -f.digits), max_exponent);
  return std::fabs(r) > largest ? std::copysign(INFINITY, x) : r;
}

format::Tensor asFloat64(const format::Tensor& like, const std::vector<double>& values) {
  format::Tensor t = like;
  t.dtype = format::Dtype::Float64;
  t.strides.assign(t.shape.size(), 1);
  for (size_t d = t.shape.size(); d-- > 1;) t.strides[d - 1] = t.strides[d] * t.shape[d];
  t.data.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double));
  t.data_size = t.data.size();
  t.has_data = true;
  t.data_in_stream = t.data_apart = false;
  return t;
}

}  // namespace

SumReplay replaySums(const format::OpRecord& consumed, const format::OpRecord& produced) {
  SumReplay s;
  // The record copied once; its tensors are kept only where summed.
  s.recorded = produced;
  std::vector<format::Tensor> tensors;
  tensors.swap(s.recorded.tensors);
  s.outcome.float64 = s.outcome.same_dtype = s.recorded;
  for (format::Tensor& out : tensors) {
    if (!readable(out)) continue;
    const uint64_t n = out.numel();
    for (const format::Tensor& in : consumed.tensors) {
      const uint64_t total = in.numel();
      if (n == 0 || total <= n || total % n != 0 || !readable(in) || !endsWith(in.shape, out.shape)) continue;
      // A row at a time: a large gradient is not held twice over in float64.
      // The correct kernel's error (same_dtype): a float32 sum (what CPU
      // kernels accumulate float32, bfloat16 and float16 in), in order, so
      // that a float32 sum that cancels is allowed its accumulation's error
      // and not only its last rounding.
      std::vector<double> row(n), sum(n, 0.0);
      std::vector<float> sum32(n, 0.f);
      for (uint64_t first = 0; first < total; first += n) {
        toDouble(in.data.data(), in.dtype, first, n, row.data());
        for (uint64_t j = 0; j < n; ++j) {
          sum[j] += row[j];
          sum32[j] += static_cast<float>(row[j]);
        }
      }
      std::vector<double> rounded(sum);
      if (out.dtype != format::Dtype::Float64) {
        for (uint64_t j = 0; j < n; ++j) rounded[j] = roundTo(sum32[j], floatFormat(out.dtype));
      }
      s.outcome.float64.tensors.push_back(asFloat64(out, sum));
      s.outcome.same_dtype.tensors.push_back(asFloat64(out, rounded));
      s.recorded.tensors.push_back(std::move(out));
      break;
    }
  }
  if (!s.empty()) {
    s.outcome.status = replay::Status::Replayed;
    s.outcome.has_same_dtype = s.outcome.has_float64 = true;
  }
  return s;
}

}  // namespace acc::analyzer
