// The AVX2 loop over finite pairs gives bit for bit what the portable loop
// gives, so compare's metrics do not depend on the machine.
#include "analyzer/judge/finite_sums.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace acc::analyzer {
namespace {

struct Case {
  const char* name;
  format::Dtype tested;
  double small;
};

void expectSame(const FiniteSums& a, const FiniteSums& b) {
  EXPECT_EQ(a.finite, b.finite);
  EXPECT_EQ(a.within1, b.within1);
  EXPECT_EQ(a.within5, b.within5);
  EXPECT_EQ(a.sign_differs, b.sign_differs);
  // Bit-identical, not merely close.
  for (auto [x, y] : {std::pair{a.sum_abs, b.sum_abs}, {a.sum_sq, b.sum_sq}, {a.sum_b2, b.sum_b2},
                      {a.sum_t2, b.sum_t2}, {a.dot, b.dot}, {a.max_abs, b.max_abs}, {a.max_rel, b.max_rel},
                      {a.max_ulp, b.max_ulp}}) {
    EXPECT_EQ(std::memcmp(&x, &y, sizeof x), 0) << x << " vs " << y;
  }
}

TEST(FiniteSums, Avx2MatchesPortableBitForBit) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "this CPU has no AVX2";
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  const size_t n = 10003;  // not a multiple of 4: the tail is the caller's
  std::vector<double> b(n), t(n);
  for (size_t i = 0; i < n; ++i) {
    // Wide magnitudes, exact zeros, subnormals and tiny differences.
    const double scale = std::ldexp(1.0, static_cast<int>(i % 60) - 30);
    b[i] = i % 97 == 0 ? 0.0 : normal(rng) * scale;
    t[i] = i % 5 == 0 ? b[i] : b[i] * (1 + 1e-4 * normal(rng));
    if (i % 211 == 0) b[i] = std::numeric_limits<double>::denorm_min() * static_cast<double>(i);
  }
  for (const Case& c : {Case{"float32", format::Dtype::Float32, 1e-6}, Case{"bfloat16", format::Dtype::BFloat16, 1e-3},
                        Case{"float16", format::Dtype::Float16, 1e-3}, Case{"int64", format::Dtype::Int64, 1}}) {
    SCOPED_TRACE(c.name);
    MetricParams p;
    p.small = c.small;
    p.ulp_format = floatFormat(c.tested);
    FiniteSums portable, avx2;
    const size_t a = addFinitePortable(b.data(), t.data(), n, p, portable);
    const size_t v = addFiniteAvx2(b.data(), t.data(), n, p, avx2);
    EXPECT_EQ(a, n - n % 4);
    EXPECT_EQ(v, a);
    expectSame(portable, avx2);
  }
}

TEST(FiniteSums, Avx2LeavesNonFiniteAndFloat64ToThePortablePath) {
  std::vector<double> b(64, 1.0), t(64, 1.5);
  MetricParams p;
  p.ulp_format = floatFormat(format::Dtype::Float32);
  FiniteSums sums;
  t[37] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(addFiniteAvx2(b.data(), t.data(), b.size(), p, sums), 0u);
  b[37] = std::nan("");
  t[37] = 1.0;
  EXPECT_EQ(addFiniteAvx2(b.data(), t.data(), b.size(), p, sums), 0u);
  EXPECT_EQ(sums.finite, 0u);
  EXPECT_EQ(sums.sum_abs, 0.0);
  b[37] = 1.0;
  p.ulp_format = floatFormat(format::Dtype::Float64);  // 2^-k below the normal range
  EXPECT_EQ(addFiniteAvx2(b.data(), t.data(), b.size(), p, sums), 0u);
  p.ulp_format = floatFormat(format::Dtype::Float32);
  EXPECT_EQ(addFiniteAvx2(b.data(), t.data(), b.size(), p, sums), __builtin_cpu_supports("avx2") ? 64u : 0u);
}

}  // namespace
}  // namespace acc::analyzer
