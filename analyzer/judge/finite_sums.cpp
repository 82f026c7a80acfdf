#include <cstdint>
#include <algorithm>
#include "analyzer/judge/finite_sums.h"

namespace acc::analyzer {
namespace {

enum class UlpMode { Integer, InRange, General };

template <UlpMode kMode>
size_t addFinite(const double* b, const double* t, size_t count, const MetricParams& p, FiniteSums& s) {
  constexpr size_t kLanes = 4;
  double sum_abs[kLanes] = {}, sum_sq[kLanes] = {}, sum_b2[kLanes] = {}, sum_t2[kLanes] = {}, dot[kLanes] = {};
  double max_abs[kLanes] = {}, max_rel[kLanes] = {}, max_ulp[kLanes] = {};
  uint64_t within1[kLanes] = {}, within5[kLanes] = {}, signs[kLanes] = {};
  const double small = p.small;
  const FloatFormat f = p.ulp_format;
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
#pragma GCC unroll 4
    for (size_t l = 0; l < kLanes; ++l) {
      const double x = b[i + l], y = t[i + l];
      const double d = y - x, a = std::fabs(d);
      sum_abs[l] += a;
      sum_sq[l] += d * d;
      sum_b2[l] += x * x;
      sum_t2[l] += y * y;
      dot[l] += x * y;
      max_abs[l] = a > max_abs[l] ? a : max_abs[l];
      const double ax = std::fabs(x);
      const double rel = a / (ax > small ? ax : small);
      max_rel[l] = rel > max_rel[l] ? rel : max_rel[l];
      within1[l] += rel <= 1e-3;
      within5[l] += rel <= 5e-3;
      signs[l] += ((x > 0) != (y > 0)) | ((x < 0) != (y < 0));
      double ulps;
      if constexpr (kMode == UlpMode::Integer) ulps = a;
      else if constexpr (kMode == UlpMode::InRange) ulps = a * inverseUlpInRange(x, f);
      else ulps = a * inverseUlp(x, f);
      max_ulp[l] = ulps > max_ulp[l] ? ulps : max_ulp[l];
    }
  }
  s.finite += i;
  for (size_t l = 0; l < kLanes; ++l) {
    s.sum_abs += sum_abs[l];
    s.sum_sq += sum_sq[l];
    s.sum_b2 += sum_b2[l];
    s.sum_t2 += sum_t2[l];
    s.dot += dot[l];
    s.max_abs = std::max(s.max_abs, max_abs[l]);
    s.max_rel = std::max(s.max_rel, max_rel[l]);
    s.max_ulp = std::max(s.max_ulp, max_ulp[l]);
    s.within1 += within1[l];
    s.within5 += within5[l];
    s.sign_differs += signs[l];
  }
  return i;
}

}  // namespace

size_t addFinitePortable(const double* b, const double* t, size_t count, const MetricParams& p, FiniteSums& sums) {
  if (p.ulp_format.digits == 0) return addFinite<UlpMode::Integer>(b, t, count, p, sums);
  if (p.ulp_format.min_exponent - p.ulp_format.digits >= -1022) return addFinite<UlpMode::InRange>(b, t, count, p, sums);
  return addFinite<UlpMode::General>(b, t, count, p, sums);
}

}  // namespace acc::analyzer
