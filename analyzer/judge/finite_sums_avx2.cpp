#include "analyzer/judge/finite_sums.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>

namespace acc::analyzer {

#if defined(__x86_64__)
namespace {

template <bool kInteger>
__attribute__((target("avx2"))) size_t kernel(const double* b, const double* t, size_t count, const MetricParams& p,
                                              FiniteSums& sums) {
  const __m256d sign = _mm256_set1_pd(-0.0), small = _mm256_set1_pd(p.small);
  const __m256d tol1 = _mm256_set1_pd(1e-3), tol5 = _mm256_set1_pd(5e-3);
  const __m256i exponent = _mm256_set1_epi64x(0x7ff0000000000000LL), low11 = _mm256_set1_epi64x(0x7ff);
  const __m256i bias = _mm256_set1_epi64x(1022), min_exponent = _mm256_set1_epi64x(p.ulp_format.min_exponent);
  const __m256i bias_plus_digits = _mm256_set1_epi64x(1023 + p.ulp_format.digits);
  __m256d sum_abs = _mm256_setzero_pd(), sum_sq = sum_abs, sum_b2 = sum_abs, sum_t2 = sum_abs, dot = sum_abs;
  __m256d max_abs = sum_abs, max_rel = sum_abs, max_ulp = sum_abs;
  __m256i within1 = _mm256_setzero_si256(), within5 = within1, special = within1, signs = within1;
  const __m256d zero = _mm256_setzero_pd();
  size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const __m256d x = _mm256_loadu_pd(b + i), y = _mm256_loadu_pd(t + i);
    const __m256i xb = _mm256_castpd_si256(x), yb = _mm256_castpd_si256(y);
    special = _mm256_or_si256(special, _mm256_cmpeq_epi64(_mm256_and_si256(xb, exponent), exponent));
    special = _mm256_or_si256(special, _mm256_cmpeq_epi64(_mm256_and_si256(yb, exponent), exponent));
    const __m256d d = _mm256_sub_pd(y, x), a = _mm256_andnot_pd(sign, d);
    // Multiply then add, never fused: the portable loop rounds twice too.
    sum_abs = _mm256_add_pd(sum_abs, a);
    sum_sq = _mm256_add_pd(sum_sq, _mm256_mul_pd(d, d));
    sum_b2 = _mm256_add_pd(sum_b2, _mm256_mul_pd(x, x));
    sum_t2 = _mm256_add_pd(sum_t2, _mm256_mul_pd(y, y));
    dot = _mm256_add_pd(dot, _mm256_mul_pd(x, y));
    max_abs = _mm256_max_pd(a, max_abs);
    const __m256d rel = _mm256_div_pd(a, _mm256_max_pd(_mm256_andnot_pd(sign, x), small));
    max_rel = _mm256_max_pd(rel, max_rel);
    within1 = _mm256_sub_epi64(within1, _mm256_castpd_si256(_mm256_cmp_pd(rel, tol1, _CMP_LE_OQ)));
    within5 = _mm256_sub_epi64(within5, _mm256_castpd_si256(_mm256_cmp_pd(rel, tol5, _CMP_LE_OQ)));
    const __m256d sign_differs =
        _mm256_or_pd(_mm256_xor_pd(_mm256_cmp_pd(x, zero, _CMP_GT_OQ), _mm256_cmp_pd(y, zero, _CMP_GT_OQ)),
                     _mm256_xor_pd(_mm256_cmp_pd(x, zero, _CMP_LT_OQ), _mm256_cmp_pd(y, zero, _CMP_LT_OQ)));
    signs = _mm256_sub_epi64(signs, _mm256_castpd_si256(sign_differs));
    __m256d ulps = a;
    if constexpr (!kInteger) {
      // One ULP at |x| is 2^k, k = max(exponent of x, min_exponent) - digits;
      // multiply by 2^-k, built from its bits.
      __m256i e = _mm256_sub_epi64(_mm256_and_si256(_mm256_srli_epi64(xb, 52), low11), bias);
      e = _mm256_blendv_epi8(min_exponent, e, _mm256_cmpgt_epi64(e, min_exponent));
      const __m256i inverse = _mm256_slli_epi64(_mm256_sub_epi64(bias_plus_digits, e), 52);
      ulps = _mm256_mul_pd(a, _mm256_castsi256_pd(inverse));
    }
    max_ulp = _mm256_max_pd(ulps, max_ulp);
  }
  if (!_mm256_testz_si256(special, special)) return 0;
  alignas(32) double lanes[8][4];
  alignas(32) uint64_t counts[3][4];
  _mm256_store_pd(lanes[0], sum_abs);
  _mm256_store_pd(lanes[1], sum_sq);
  _mm256_store_pd(lanes[2], sum_b2);
  _mm256_store_pd(lanes[3], sum_t2);
  _mm256_store_pd(lanes[4], dot);
  _mm256_store_pd(lanes[5], max_abs);
  _mm256_store_pd(lanes[6], max_rel);
  _mm256_store_pd(lanes[7], max_ulp);
  _mm256_store_si256(reinterpret_cast<__m256i*>(counts[0]), within1);
  _mm256_store_si256(reinterpret_cast<__m256i*>(counts[1]), within5);
  _mm256_store_si256(reinterpret_cast<__m256i*>(counts[2]), signs);
  sums.finite += i;
  for (int l = 0; l < 4; ++l) {
    sums.sum_abs += lanes[0][l];
    sums.sum_sq += lanes[1][l];
    sums.sum_b2 += lanes[2][l];
    sums.sum_t2 += lanes[3][l];
    sums.dot += lanes[4][l];
    sums.max_abs = std::max(sums.max_abs, lanes[5][l]);
    sums.max_rel = std::max(sums.max_rel, lanes[6][l]);
    sums.max_ulp = std::max(sums.max_ulp, lanes[7][l]);
    sums.within1 += counts[0][l];
    sums.within5 += counts[1][l];
    sums.sign_differs += counts[2][l];
  }
  return i;
}

}  // namespace

size_t addFiniteAvx2(const double* b, const double* t, size_t count, const MetricParams& p, FiniteSums& sums) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (!avx2 || count < 4) return 0;
  if (p.ulp_format.digits == 0) return kernel<true>(b, t, count, p, sums);
  if (p.ulp_format.min_exponent - p.ulp_format.digits < -1022) return 0;
  return kernel<false>(b, t, count, p, sums);
}

#else

size_t addFiniteAvx2(const double*, const double*, size_t, const MetricParams&, FiniteSums&) { return 0; }

#endif

}  // namespace acc::analyzer
