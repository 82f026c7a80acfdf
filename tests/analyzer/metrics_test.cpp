// Metrics, conversions and verdicts of analyzer/compare on hand-made data.
#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "analyzer/common/elements.h"
#include "analyzer/judge/metrics.h"
#include "analyzer/judge/thresholds.h"

namespace acc::analyzer {
namespace {

using format::Dtype;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

MetricParams params(Dtype d, double small = std::ldexp(1.0, -14)) {
  MetricParams p;
  p.small = small;
  p.ulp_format = floatFormat(d);
  return p;
}

TensorMetrics on(const std::vector<double>& b, const std::vector<double>& t, Dtype d = Dtype::Float64,
                 double small = std::ldexp(1.0, -14)) {
  MetricAccumulator acc;
  acc.add(b.data(), t.data(), b.size(), params(d, small));
  return acc.finish(params(d, small));
}

TEST(CompareMetrics, IdenticalDataIsPerfect) {
  TensorMetrics m = on({1, -2, 3.5, 0}, {1, -2, 3.5, 0});
  EXPECT_TRUE(m.compared);
  EXPECT_EQ(m.cosine, 1);
  EXPECT_EQ(m.max_abs, 0);
  EXPECT_EQ(m.max_rel, 0);
  EXPECT_EQ(m.rel_l2, 0);
  EXPECT_EQ(m.within_1e3, 1);
  EXPECT_EQ(m.max_ulp, 0);
}

TEST(CompareMetrics, KnownValues) {
  TensorMetrics m = on({1, 2, 3, 4}, {1, 2, 3, 5});
  EXPECT_DOUBLE_EQ(m.max_abs, 1);
  EXPECT_DOUBLE_EQ(m.max_rel, 0.25);
  EXPECT_DOUBLE_EQ(m.mean_abs, 0.25);
  EXPECT_DOUBLE_EQ(m.rmse, 0.5);
  EXPECT_DOUBLE_EQ(m.rel_l2, 1 / std::sqrt(30.0));
  EXPECT_DOUBLE_EQ(m.cosine, 34 / (std::sqrt(30.0) * std::sqrt(39.0)));
  EXPECT_DOUBLE_EQ(m.within_1e3, 0.75);
  EXPECT_DOUBLE_EQ(m.within_5e3, 0.75);
}

TEST(CompareMetrics, ZeroGuardJudgesSmallValuesByAbsoluteError) {
  const double small = std::ldexp(1.0, -14);
  TensorMetrics m = on({0, 1}, {1e-6, 1}, Dtype::Float32, small);
  EXPECT_DOUBLE_EQ(m.max_rel, 1e-6 / small);
  // Reference all zero: rel_l2 relative to small * sqrt(n).
  TensorMetrics z = on({0, 0, 0, 0}, {1e-6, 0, 0, 0}, Dtype::Float32, small);
  EXPECT_DOUBLE_EQ(z.rel_l2, 1e-6 / (small * 2));
  EXPECT_TRUE(std::isnan(z.cosine));  // undefined: one side has no direction
}

TEST(CompareMetrics, NanAndInfPositions) {
  TensorMetrics m = on({kNaN, 1, kInf, 2, -kInf, kNaN}, {kNaN, kNaN, kInf, kInf, kInf, 3});
  EXPECT_EQ(m.nan_mismatch, 2u);  // positions 1 and 5
  EXPECT_EQ(m.inf_mismatch, 2u);  // positions 3 and 4 (-inf vs +inf)
  // NaN/NaN and +inf/+inf agree and are left out of the numeric metrics.
  EXPECT_EQ(m.max_abs, 0);
  EXPECT_DOUBLE_EQ(m.within_1e3, 2.0 / 6.0);
}

TEST(CompareMetrics, UlpOfTheTestedDtype) {
  const double one_ulp = std::ldexp(1.0, -23);  // float32 at 1
  EXPECT_DOUBLE_EQ(on({1.0}, {1.0 + one_ulp}, Dtype::Float32).max_ulp, 1);
  EXPECT_DOUBLE_EQ(on({1.5}, {1.5 + 3 * one_ulp}, Dtype::Float32).max_ulp, 3);
  EXPECT_DOUBLE_EQ(on({1.0}, {1.0 + std::ldexp(1.0, -10)}, Dtype::Float16).max_ulp, 1);
  EXPECT_DOUBLE_EQ(on({1.0}, {1.0 + std::ldexp(1.0, -7)}, Dtype::BFloat16).max_ulp, 1);
  // Below the normal range the ULP stays the smallest subnormal's.
  EXPECT_DOUBLE_EQ(on({0.0}, {std::ldexp(1.0, -149)}, Dtype::Float32).max_ulp, 1);
  EXPECT_DOUBLE_EQ(on({std::ldexp(1.0, -140)}, {std::ldexp(1.0, -140) + std::ldexp(1.0, -148)}, Dtype::Float32).max_ulp, 2);
  // Integers: one ULP is 1.
  EXPECT_DOUBLE_EQ(on({3}, {5}, Dtype::Int64).max_ulp, 2);
}

TEST(CompareMetrics, ChunksMergeToTheWhole) {
  std::vector<double> b, t;
  for (int i = 0; i < 1000; ++i) {
    b.push_back(std::sin(i));
    t.push_back(std::sin(i) * (1 + 1e-4 * std::cos(i)));
  }
  MetricParams p = params(Dtype::Float32);
  MetricAccumulator whole, first, second;
  whole.add(b.data(), t.data(), b.size(), p);
  first.add(b.data(), t.data(), 300, p);
  second.add(b.data() + 300, t.data() + 300, 700, p);
  first.merge(second);
  TensorMetrics w = whole.finish(p), m = first.finish(p);
  EXPECT_EQ(w.max_abs, m.max_abs);
  EXPECT_EQ(w.max_ulp, m.max_ulp);
  EXPECT_EQ(w.within_1e3, m.within_1e3);
  EXPECT_NEAR(w.rel_l2, m.rel_l2, 1e-15);
  EXPECT_NEAR(w.cosine, m.cosine, 1e-15);
}

TEST(CompareElements, ConversionsToDouble) {
  // float16 1.0, -2.0, 65504, smallest subnormal; bfloat16 1.0, -0.5
  const uint16_t half[] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00};
  double out[5];
  toDouble(reinterpret_cast<const char*>(half), Dtype::Float16, 0, 5, out);
  EXPECT_EQ(out[0], 1.0);
  EXPECT_EQ(out[1], -2.0);
  EXPECT_EQ(out[2], 65504.0);
  EXPECT_EQ(out[3], std::ldexp(1.0, -24));
  EXPECT_EQ(out[4], kInf);
  const uint16_t bf[] = {0x3f80, 0xbf00};
  toDouble(reinterpret_cast<const char*>(bf), Dtype::BFloat16, 0, 2, out);
  EXPECT_EQ(out[0], 1.0);
  EXPECT_EQ(out[1], -0.5);
  const int8_t i8[] = {-3, 7};
  toDouble(reinterpret_cast<const char*>(i8), Dtype::Int8, 1, 1, out);
  EXPECT_EQ(out[0], 7.0);
  const float c64[] = {1.5f, -2.5f, 3.0f, 4.0f};  // two complex64 = four reals
  toDouble(reinterpret_cast<const char*>(c64), Dtype::Complex64, 1, 3, out);
  EXPECT_EQ(out[0], -2.5);
  EXPECT_EQ(out[2], 4.0);
  EXPECT_EQ(realsPerElement(Dtype::Complex128), 2u);
}

// Long runs take the AVX2 path where the CPU has it (8 at a time, then a
// scalar tail); every value must still widen exactly.
TEST(CompareElements, LongFloat32AndBfloat16RunsWidenExactly) {
  std::vector<float> f;
  for (int i = 0; i < 21; ++i) f.push_back(std::ldexp(1.0f + static_cast<float>(i) / 64, i - 10) * (i % 2 ? -1 : 1));
  f[3] = std::numeric_limits<float>::denorm_min();
  f[9] = -0.0f;
  f[12] = std::numeric_limits<float>::infinity();
  f[17] = std::nanf("");
  std::vector<double> out(f.size());
  toDouble(reinterpret_cast<const char*>(f.data()), Dtype::Float32, 2, f.size() - 2, out.data());
  for (size_t i = 2; i < f.size(); ++i) {
    if (std::isnan(f[i])) EXPECT_TRUE(std::isnan(out[i - 2]));
    else EXPECT_EQ(out[i - 2], static_cast<double>(f[i])) << i;
  }
  EXPECT_TRUE(std::signbit(out[9 - 2]));
  std::vector<uint16_t> bf;
  for (float v : f) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    bf.push_back(static_cast<uint16_t>(bits >> 16));  // truncation: still a bfloat16
  }
  toDouble(reinterpret_cast<const char*>(bf.data()), Dtype::BFloat16, 0, bf.size(), out.data());
  for (size_t i = 0; i < bf.size(); ++i) {
    uint32_t bits = static_cast<uint32_t>(bf[i]) << 16;
    float expected;
    std::memcpy(&expected, &bits, 4);
    if (std::isnan(expected)) EXPECT_TRUE(std::isnan(out[i]));
    else EXPECT_EQ(out[i], static_cast<double>(expected)) << i;
  }
}

TEST(CompareMetrics, StatisticsOnly) {
  format::Stats s0{-1, 3, 0.5, 4, 0, 0, 42};
  TensorMetrics same = statsMetrics(s0, s0, true, 16, std::ldexp(1.0, -14));
  EXPECT_TRUE(same.from_stats);
  EXPECT_TRUE(same.checksum_equal);
  EXPECT_EQ(same.stat_error, 0);
  format::Stats s1 = s0;
  s1.checksum = 43;
  s1.norm = 4.004;
  s1.mean = 0.501;
  s1.max = 3.003;
  TensorMetrics m = statsMetrics(s0, s1, true, 16, std::ldexp(1.0, -14));
  EXPECT_FALSE(m.checksum_equal);
  EXPECT_TRUE(std::isnan(m.cosine));
  EXPECT_TRUE(std::isnan(m.within_1e3));
  EXPECT_NEAR(m.max_abs, 0.003, 1e-12);                 // >= |max1 - max0|
  EXPECT_NEAR(m.mean_abs, 0.001, 1e-12);                // >= |mean1 - mean0|
  EXPECT_NEAR(m.rmse, 0.004 / 4, 1e-12);                // >= |norm1 - norm0| / sqrt(n)
  // Every statistic's error on the tensor's scale (its norm): lower bounds
  // of rel_l2, the extremes' too (0.003 / 4, not 0.003 / 3).
  EXPECT_NEAR(m.rel_l2, std::max({0.004 / 4, 0.001 / (4 / 4.0), 0.003 / 4}), 1e-12);
  EXPECT_EQ(m.stat_error, m.rel_l2);
  // Pure rounding noise (a gradient that is 0 in exact arithmetic): its
  // extremes differ by as much as its values, yet on the scale the zero
  // guard gives it (2^-14 per element) the error is tiny.
  format::Stats noise0{-1e-8, 1e-8, 0, 1e-8, 0, 0, 7}, noise1{-2e-8, 0.5e-8, 0, 1.1e-8, 0, 0, 8};
  TensorMetrics quiet = statsMetrics(noise0, noise1, true, 512, std::ldexp(1.0, -14));
  EXPECT_LT(quiet.stat_error, 1e-5);
  format::Stats nan = s0;
  nan.nan_count = 2;
  EXPECT_EQ(statsMetrics(s0, nan, true, 16, 1).nan_mismatch, 2u);
}

TensorPair pairOf(Dtype d0, Dtype d1, const TensorMetrics& m) {
  TensorPair p;
  p.dtype0 = d0;
  p.dtype1 = d1;
  p.shape0 = p.shape1 = {4};
  p.metrics = m;
  return p;
}

TEST(CompareVerdicts, DtypeAwareDefaults) {
  Thresholds t = defaultThresholds();
  TensorMetrics m;
  m.compared = true;
  m.rel_l2 = 1e-3;
  TensorPair fp32 = pairOf(Dtype::Float32, Dtype::Float32, m);
  judge(fp32, t);
  EXPECT_EQ(fp32.verdict, Verdict::Fail);
  EXPECT_NE(fp32.reason.find("rel_l2"), std::string::npos);
  TensorPair bf16 = pairOf(Dtype::Float32, Dtype::BFloat16, m);  // judged at bf16
  judge(bf16, t);
  EXPECT_EQ(bf16.verdict, Verdict::Pass);
  m.rel_l2 = 3e-6;
  TensorPair warn = pairOf(Dtype::Float64, Dtype::Float32, m);
  judge(warn, t);
  EXPECT_EQ(warn.verdict, Verdict::Pass);
  m.rel_l2 = 3e-5;
  warn = pairOf(Dtype::Float64, Dtype::Float32, m);
  judge(warn, t);
  EXPECT_EQ(warn.verdict, Verdict::Warn);
  m.rel_l2 = 1e-9;
  TensorPair ints = pairOf(Dtype::Int64, Dtype::Int64, m);
  judge(ints, t);
  EXPECT_EQ(ints.verdict, Verdict::Fail);
  m.rel_l2 = 0;
  m.nan_mismatch = 1;
  TensorPair nan = pairOf(Dtype::Float32, Dtype::Float32, m);
  judge(nan, t);
  EXPECT_EQ(nan.verdict, Verdict::Fail);
  EXPECT_EQ(pairPrecision(Dtype::Float64, Dtype::Float16), Precision::Float16);
  EXPECT_EQ(pairPrecision(Dtype::Int32, Dtype::Float32), Precision::Float32);
}

TEST(CompareVerdicts, Overrides) {
  Thresholds t = defaultThresholds();
  EXPECT_EQ(applyOverride(t, &Limits::rel_l2_fail, "0.5"), "");
  for (const Limits& l : t.limits) EXPECT_EQ(l.rel_l2_fail, 0.5);
  EXPECT_EQ(applyOverride(t, &Limits::rel_l2_fail, "fp32=1e-3,bf16=0.1"), "");
  EXPECT_EQ(t.of(Precision::Float32).rel_l2_fail, 1e-3);
  EXPECT_EQ(t.of(Precision::BFloat16).rel_l2_fail, 0.1);
  EXPECT_EQ(t.of(Precision::Float16).rel_l2_fail, 0.5);
  EXPECT_NE(applyOverride(t, &Limits::rel_l2_fail, "fp32="), "");
  EXPECT_NE(applyOverride(t, &Limits::rel_l2_fail, "abc"), "");
  EXPECT_NE(applyOverride(t, &Limits::rel_l2_fail, "fp8=1"), "");
}

// docs/METRICS.md's threshold table is the code's defaults.
TEST(CompareVerdicts, MetricsDocumentListsTheDefaultThresholds) {
  std::ifstream in(std::string(ACC_SOURCE_DIR) + "/docs/METRICS.md");
  std::stringstream doc;
  doc << in.rdbuf();
  ASSERT_FALSE(doc.str().empty());
  auto g = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.10g", v);
    return std::string(b);
  };
  const Thresholds t = defaultThresholds();
  for (size_t i = 0; i < kPrecisions; ++i) {
    const Limits& l = t.limits[i];
    std::string cosine_warn = std::isinf(l.cosine_warn) ? "—" : g(l.cosine_warn);
    std::string cosine_fail = std::isinf(l.cosine_fail) ? "—" : g(l.cosine_fail);
    std::string within = l.within_warn == 0 ? "—"
                                            : std::string(l.within_5e3 ? "within_5e3" : "within_1e3") + " < " +
                                                  g(l.within_warn);
    int e;
    double m = std::frexp(l.small, &e);
    std::string small = (m == 0.5 && e != 1) ? "2^" + std::to_string(e - 1) : g(l.small);
    std::string row = std::string("| ") + precisionName(static_cast<Precision>(i)) + " | " + g(l.rel_l2_warn) +
                      " | " + g(l.rel_l2_fail) + " | " + cosine_warn + " | " + cosine_fail + " | " + within + " | " +
                      small + " |";
    EXPECT_NE(doc.str().find(row), std::string::npos) << "docs/METRICS.md lacks the row\n" << row;
  }
  EXPECT_NE(doc.str().find("origin_factor 10"), std::string::npos);
  EXPECT_EQ(t.origin_factor, 10);
}

}  // namespace
}  // namespace acc::analyzer
