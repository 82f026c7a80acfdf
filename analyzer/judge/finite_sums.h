// Sums over element pairs that are finite on both sides: the bulk of a
// level-2 comparison. A portable loop and an AVX2 one with the same lanes,
// operations and order of summation, so the metrics do not depend on the
// machine they were computed on.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cmath>
#include <cstring>

#include "analyzer/common/elements.h"

namespace acc::analyzer {

// What element-wise metrics depend on besides the data.
struct MetricParams {
  double small = 1;            // zero guard of relative errors (Limits::small)
  FloatFormat ulp_format;      // DIR1's dtype: one ULP
};

struct FiniteSums {
  uint64_t finite = 0;  // pairs added
  uint64_t within1 = 0, within5 = 0;
  uint64_t sign_differs = 0;  // pairs of which one is > 0, < 0 or 0 and the other not
  double sum_abs = 0, sum_sq = 0, sum_b2 = 0, sum_t2 = 0, dot = 0;
  double max_abs = 0, max_rel = 0, max_ulp = 0;
};

// Both add the first count - count % 4 pairs to `sums` and return how many
// they added. The portable loop needs pairs without NaN or Inf. The AVX2 one
// checks that itself and returns 0 (adding nothing) when it finds one, when
// the CPU lacks AVX2, or when one ULP of the tested dtype is not a normal
// double for every value (float64).
size_t addFinitePortable(const double* b, const double* t, size_t count, const MetricParams& p, FiniteSums& sums);
size_t addFiniteAvx2(const double* b, const double* t, size_t count, const MetricParams& p, FiniteSums& sums);

// 2^-k for the ULP of `x`: a ULP of the format at |x| is 2^(e - digits)
// with |x| in [2^(e-1), 2^e), e clamped to the format's min_exponent.
inline double inverseUlp(double x, const FloatFormat& f) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int biased = static_cast<int>((bits >> 52) & 0x7ff);
  int e = biased == 0 ? -1022 : biased - 1022;
  int k = std::max(e, f.min_exponent) - f.digits;
  if (k >= -1022 && k <= 1022) {
    uint64_t inv = static_cast<uint64_t>(1023 - k) << 52;
    double v;
    std::memcpy(&v, &inv, sizeof v);
    return v;
  }
  return std::ldexp(1.0, -k);
}

// The same when 2^-k is a normal double for every x (all formats but float64).
inline double inverseUlpInRange(double x, const FloatFormat& f) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int biased = static_cast<int>((bits >> 52) & 0x7ff);
  int e = biased - 1022;
  int k = (e > f.min_exponent ? e : f.min_exponent) - f.digits;
  uint64_t inv = static_cast<uint64_t>(1023 - k) << 52;
  double v;
  std::memcpy(&v, &inv, sizeof v);
  return v;
}

}  // namespace acc::analyzer
