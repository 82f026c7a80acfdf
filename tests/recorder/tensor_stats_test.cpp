// recorder::tensorStatsFused (one pass over CPU memory) and
// recorder::tensorStatsAten (ATen reductions) must agree with each other and
// with values computed independently here.
#include "recorder/capture/cpu/tensor_stats.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace acc::recorder {
namespace {

using format::Stats;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Exactly equal, with NaN equal to NaN.
bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Within `rel` of each other relative to the larger magnitude; NaN and
// infinities must match exactly.
::testing::AssertionResult close(double a, double b, double rel = 1e-9) {
  if (same(a, b)) return ::testing::AssertionSuccess();
  if (std::isfinite(a) && std::isfinite(b) &&
      std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b))) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << a << " vs " << b;
}

// checksum = sum(bits_i * (2i+1)) mod 2^64 over row-major elements, bits
// sign-extended from the same-width integer, 1-byte types zero-extended.
uint64_t referenceChecksum(const at::Tensor& tensor) {
  at::Tensor t = tensor.contiguous();
  const auto* bytes = static_cast<const unsigned char*>(t.data_ptr());
  const size_t width = t.element_size();
  uint64_t sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const unsigned char* p = bytes + static_cast<size_t>(i) * width;
    uint64_t bits = 0;
    switch (width) {
      case 1: bits = *p; break;
      case 2: { int16_t v; std::memcpy(&v, p, 2); bits = static_cast<uint64_t>(int64_t{v}); break; }
      case 4: { int32_t v; std::memcpy(&v, p, 4); bits = static_cast<uint64_t>(int64_t{v}); break; }
      case 8: { int64_t v; std::memcpy(&v, p, 8); bits = static_cast<uint64_t>(v); break; }
      default: ADD_FAILURE() << "unexpected element size " << width;
    }
    sum += bits * (2 * static_cast<uint64_t>(i) + 1);
  }
  return sum;
}

// The mean on the scale of the tensor's values: the device path sums in the
// tensor's precision (float32 blocks, then float64), so its error is float32
// rounding of the values' magnitude, which the norm bounds.
::testing::AssertionResult closeMean(const Stats& a, double b, double rel) {
  if (close(a.mean, b, rel)) return ::testing::AssertionSuccess();
  if (std::isfinite(a.mean) && std::isfinite(b) && std::fabs(a.mean - b) <= rel * a.norm) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << a.mean << " vs " << b << " (norm " << a.norm << ")";
}

// Float32 accuracy: what the device path (tensorStatsAten) guarantees for
// mean and norm against the fused pass's float64 sums.
constexpr double kDeviceRel = 1e-6;

void expectAgree(const Stats& fused, const Stats& aten) {
  EXPECT_EQ(fused.checksum, aten.checksum);
  EXPECT_EQ(fused.nan_count, aten.nan_count);
  EXPECT_EQ(fused.inf_count, aten.inf_count);
  EXPECT_TRUE(same(fused.min, aten.min)) << fused.min << " vs " << aten.min;
  EXPECT_TRUE(same(fused.max, aten.max)) << fused.max << " vs " << aten.max;
  EXPECT_TRUE(closeMean(fused, aten.mean, kDeviceRel));
  EXPECT_TRUE(close(fused.norm, aten.norm, kDeviceRel));
}

// Values computed here, independently of both implementations (before either
// runs, so neither can influence them).
struct Reference {
  uint64_t checksum, nan_count, inf_count;
  double min, max, mean, norm;
};

Reference reference(const at::Tensor& t) {
  at::Tensor d = t.to(at::kDouble, /*non_blocking=*/false, /*copy=*/true);
  Reference r{};
  r.checksum = referenceChecksum(t);
  r.nan_count = static_cast<uint64_t>(at::isnan(d).sum().item<int64_t>());
  r.inf_count = static_cast<uint64_t>(at::isinf(d).sum().item<int64_t>());
  if (t.numel() == 0) return r;
  r.min = t.min().to(at::kDouble).item<double>();
  r.max = t.max().to(at::kDouble).item<double>();
  r.mean = d.mean().item<double>();
  r.norm = d.norm().item<double>();
  return r;
}

void expectMatches(const Stats& s, const Reference& r, double rel = 1e-9) {
  EXPECT_EQ(s.checksum, r.checksum);
  EXPECT_EQ(s.nan_count, r.nan_count);
  EXPECT_EQ(s.inf_count, r.inf_count);
  EXPECT_TRUE(same(s.min, r.min)) << s.min << " vs " << r.min;
  EXPECT_TRUE(same(s.max, r.max)) << s.max << " vs " << r.max;
  EXPECT_TRUE(closeMean(s, r.mean, rel));
  EXPECT_TRUE(close(s.norm, r.norm, rel));
}

void checkFused(const at::Tensor& t) {
  Reference ref = reference(t);
  SCOPED_TRACE("fused");
  expectMatches(tensorStatsFused(t), ref);
}

// Both implementations agree with each other and with the reference.
void checkBoth(const at::Tensor& t) {
  Reference ref = reference(t);
  Stats fused = tensorStatsFused(t);
  Stats aten = tensorStatsAten(t);
  expectAgree(fused, aten);
  {
    SCOPED_TRACE("fused");
    expectMatches(fused, ref);
  }
  {
    SCOPED_TRACE("aten");
    expectMatches(aten, ref, kDeviceRel);
  }
}

class TensorStatsTest : public ::testing::Test {
 protected:
  void SetUp() override { at::manual_seed(20240611); }
};

struct DtypeCase {
  const char* name;
  at::Tensor (*make)();
};

at::Tensor randomFloat(at::ScalarType type) {
  // Offset keeps the mean well away from zero so relative checks are meaningful.
  return (at::randn({37, 53}, at::kDouble) * 10 + 3).to(type);
}

const DtypeCase kNarrowCases[] = {
    {"float32", [] { return randomFloat(at::kFloat); }},
    {"float16", [] { return randomFloat(at::kHalf); }},
    {"bfloat16", [] { return randomFloat(at::kBFloat16); }},
    {"int32", [] { return at::randint(-1000000, 1000000, {41, 29}, at::kInt); }},
    {"int16", [] { return at::randint(-30000, 30000, {41, 29}, at::kShort); }},
    {"int8", [] { return at::randint(-128, 128, {41, 29}, at::kChar); }},
    {"uint8", [] { return at::randint(0, 256, {41, 29}, at::kByte); }},
    {"bool", [] { return at::randint(0, 2, {41, 29}, at::kLong).to(at::kBool); }},
};

// 8-byte elements, where the ATen path's integer view shares the input's
// memory (AtenLeavesEightByteInputsUnchanged guards against writing to it).
const DtypeCase kWideCases[] = {
    {"float64", [] { return randomFloat(at::kDouble); }},
    {"int64", [] { return at::randint(-(int64_t{1} << 40), int64_t{1} << 40, {41, 29}, at::kLong); }},
};

TEST_F(TensorStatsTest, RandomTensorsOfNarrowDtypes) {
  for (const DtypeCase& c : kNarrowCases) {
    SCOPED_TRACE(c.name);
    at::Tensor t = c.make();
    checkBoth(t);
    EXPECT_EQ(dtypeOf(t.scalar_type()), format::dtypeFromName(c.name));
  }
}

TEST_F(TensorStatsTest, FusedOnRandomTensorsOfEightByteDtypes) {
  for (const DtypeCase& c : kWideCases) {
    SCOPED_TRACE(c.name);
    at::Tensor t = c.make();
    checkFused(t);
    checkFused(t.t());
    EXPECT_EQ(dtypeOf(t.scalar_type()), format::dtypeFromName(c.name));
  }
}

// For 8-byte dtypes the checksum's integer view is the input's own memory:
// the weighing must never write through it (an earlier version did, in
// place), and the statistics must be those of the values as they were.
TEST_F(TensorStatsTest, AtenLeavesEightByteInputsUnchanged) {
  for (const DtypeCase& c : kWideCases) {
    SCOPED_TRACE(c.name);
    at::Tensor t = c.make();
    at::Tensor before = t.clone();
    tensorStatsAten(t);
    EXPECT_TRUE(at::equal(t, before));
  }
}

TEST_F(TensorStatsTest, AtenAgreesOnEightByteDtypes) {
  for (const DtypeCase& c : kWideCases) {
    SCOPED_TRACE(c.name);
    at::Tensor t = c.make();
    checkBoth(t);
    checkBoth(t.t());
    at::Tensor nan = at::tensor(std::vector<double>{1.0, kNaN, -3.0, kInf}).to(t.scalar_type());
    checkBoth(nan);
  }
}

TEST_F(TensorStatsTest, NonContiguousTensors) {
  for (const DtypeCase& c : kNarrowCases) {
    SCOPED_TRACE(c.name);
    at::Tensor t = c.make();
    at::Tensor transposed = t.t();
    ASSERT_FALSE(transposed.is_contiguous());
    checkBoth(transposed);
    at::Tensor strided = t.slice(1, 0, t.size(1), 3);  // every third column
    ASSERT_FALSE(strided.is_contiguous());
    checkBoth(strided);
  }
  // Stats follow the logical row-major order, not the storage order.
  at::Tensor t = at::arange(12, at::kInt).reshape({3, 4});
  EXPECT_EQ(tensorStatsFused(t.t()).checksum, tensorStatsFused(t.t().contiguous()).checksum);
  EXPECT_NE(tensorStatsFused(t).checksum, tensorStatsFused(t.t()).checksum);
}

TEST_F(TensorStatsTest, EmptyTensor) {
  for (at::ScalarType type : {at::kFloat, at::kInt, at::kBool}) {
    at::Tensor t = at::empty({0, 5}, type);
    Stats fused = tensorStatsFused(t);
    Stats aten = tensorStatsAten(t);
    expectAgree(fused, aten);
    EXPECT_EQ(fused.checksum, 0u);
    EXPECT_EQ(fused.nan_count, 0u);
    EXPECT_EQ(fused.inf_count, 0u);
    EXPECT_EQ(fused.min, 0.0);
    EXPECT_EQ(fused.max, 0.0);
    EXPECT_EQ(fused.mean, 0.0);
    EXPECT_EQ(fused.norm, 0.0);
  }
}

TEST_F(TensorStatsTest, HandComputedTinyTensors) {
  struct Case {
    const char* what;
    at::Tensor t;
    uint64_t checksum;
  };
  const std::vector<Case> cases = {
      // -1 sign-extends to 2^64-1: -1*1 + 2*3 + 3*5 = 20.
      {"int32", at::tensor(std::vector<int32_t>{-1, 2, 3}), 20},
      // 1.0f = 0x3f800000; -2.0f = 0xc0000000 sign-extends to 0xffffffffc0000000.
      {"float32", at::tensor(std::vector<float>{1.0f, -2.0f}),
       0x3f800000ULL + 0xffffffffc0000000ULL * 3},
      // 1.0 half = 0x3c00; -2.0 half = 0xc000 sign-extends.
      {"float16", at::tensor(std::vector<float>{1.0f, -2.0f}).to(at::kHalf),
       0x3c00ULL + 0xffffffffffffc000ULL * 3},
      // 1-byte types are zero-extended: int8 -1 counts as 255.
      {"int8", at::tensor(std::vector<int8_t>{-1, 2}), 255 + 2 * 3},
      {"uint8", at::tensor(std::vector<uint8_t>{255, 1}), 255 + 1 * 3},
      {"bool", at::tensor(std::vector<int64_t>{1, 0, 1}).to(at::kBool), 1 + 0 * 3 + 1 * 5},
      {"int64", at::tensor(std::vector<int64_t>{INT64_MIN, 1}),
       0x8000000000000000ULL + 1 * 3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(referenceChecksum(c.t), c.checksum);
    EXPECT_EQ(tensorStatsFused(c.t).checksum, c.checksum);
    EXPECT_EQ(tensorStatsAten(c.t).checksum, c.checksum);
  }

  Stats s = tensorStatsFused(at::tensor(std::vector<int32_t>{-1, 2, 3}));
  EXPECT_EQ(s.min, -1.0);
  EXPECT_EQ(s.max, 3.0);
  EXPECT_DOUBLE_EQ(s.mean, 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.norm, std::sqrt(14.0));
  EXPECT_EQ(s.nan_count, 0u);
  EXPECT_EQ(s.inf_count, 0u);
}

// Complex tensors are summarised as their real and imaginary parts: the
// device path's mean divides its sum by twice the element count.
TEST_F(TensorStatsTest, ComplexTensorsCountBothParts) {
  at::Tensor t = at::complex(at::tensor(std::vector<float>{1, 2, 3}), at::tensor(std::vector<float>{-1, 5, 0}));
  Stats fused = tensorStatsFused(t);
  expectAgree(fused, tensorStatsAten(t));
  EXPECT_DOUBLE_EQ(fused.mean, 10.0 / 6.0);
  EXPECT_DOUBLE_EQ(fused.min, -1.0);
  EXPECT_DOUBLE_EQ(fused.max, 5.0);
}

TEST_F(TensorStatsTest, NaNPropagatesAndIsCounted) {
  for (at::ScalarType type : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    SCOPED_TRACE(c10::toString(type));
    at::Tensor t = at::tensor(std::vector<double>{1.0, kNaN, -3.0, kInf, kNaN, 2.0}).to(type);
    Stats fused = tensorStatsFused(t);
    expectAgree(fused, tensorStatsAten(t));
    EXPECT_EQ(fused.nan_count, 2u);
    EXPECT_EQ(fused.inf_count, 1u);
    EXPECT_TRUE(std::isnan(fused.min));
    EXPECT_TRUE(std::isnan(fused.max));
    EXPECT_TRUE(std::isnan(fused.mean));
    EXPECT_TRUE(std::isnan(fused.norm));
    EXPECT_EQ(fused.checksum, referenceChecksum(t));
  }
}

TEST_F(TensorStatsTest, InfinitiesAreCountedAndIncluded) {
  at::Tensor t = at::tensor(std::vector<float>{1.0f, INFINITY, -2.0f});
  Stats fused = tensorStatsFused(t);
  expectAgree(fused, tensorStatsAten(t));
  EXPECT_EQ(fused.inf_count, 1u);
  EXPECT_EQ(fused.nan_count, 0u);
  EXPECT_EQ(fused.min, -2.0);
  EXPECT_EQ(fused.max, kInf);
  EXPECT_EQ(fused.mean, kInf);
  EXPECT_EQ(fused.norm, kInf);

  at::Tensor both = at::tensor(std::vector<float>{-INFINITY, 5.0f, INFINITY});
  Stats b = tensorStatsFused(both);
  expectAgree(b, tensorStatsAten(both));
  EXPECT_EQ(b.inf_count, 2u);
  EXPECT_EQ(b.min, -kInf);
  EXPECT_EQ(b.max, kInf);
  EXPECT_TRUE(std::isnan(b.mean));  // inf + -inf, as torch's mean gives
}

TEST_F(TensorStatsTest, LargeTensorSpanningSeveralChunks) {
  at::Tensor t = at::rand({3, 70001}, at::kFloat) * 5 - 1;  // > 3 chunks of 65536
  ASSERT_GT(t.numel(), 3 * 65536);
  checkBoth(t);
  // A NaN and an inf in a late chunk only.
  t[2][70000].fill_(kNaN);
  t[2][69999].fill_(kInf);
  Stats fused = tensorStatsFused(t);
  expectAgree(fused, tensorStatsAten(t));
  EXPECT_EQ(fused.nan_count, 1u);
  EXPECT_EQ(fused.inf_count, 1u);
  EXPECT_TRUE(std::isnan(fused.min));
}

TEST_F(TensorStatsTest, ResultsDoNotDependOnThreadCount) {
  const int original = at::get_num_threads();
  at::Tensor t = at::randn({5, 100000}, at::kFloat) * 1e3;  // 8 chunks
  at::set_num_threads(1);
  ASSERT_EQ(at::get_num_threads(), 1);
  Stats one = tensorStatsFused(t);
  at::set_num_threads(2);
  ASSERT_EQ(at::get_num_threads(), 2);
  Stats two = tensorStatsFused(t);
  at::set_num_threads(original);

  EXPECT_EQ(std::memcmp(&one.min, &two.min, sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(&one.max, &two.max, sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(&one.mean, &two.mean, sizeof(double)), 0) << one.mean << " " << two.mean;
  EXPECT_EQ(std::memcmp(&one.norm, &two.norm, sizeof(double)), 0) << one.norm << " " << two.norm;
  EXPECT_EQ(one.checksum, two.checksum);
  EXPECT_EQ(one.nan_count, two.nan_count);
  EXPECT_EQ(one.inf_count, two.inf_count);
  expectAgree(one, tensorStatsAten(t));
}

// NaNs and infinities in every lane of the vector pass's body, not only in
// its scalar tail: counted one by one.
TEST_F(TensorStatsTest, NaNsAndInfinitiesInEveryLaneAreCounted) {
  for (at::ScalarType type : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    SCOPED_TRACE(c10::toString(type));
    at::Tensor t = at::rand({4099}, at::kDouble);
    uint64_t nans = 0, infs = 0;
    for (int64_t i = 3; i < 4096; i += 37) {
      t[i].fill_(i % 3 == 0 ? kNaN : (i % 3 == 1 ? kInf : -kInf));
      (i % 3 == 0 ? nans : infs) += 1;
    }
    t = t.to(type);
    Stats fused = tensorStatsFused(t);
    EXPECT_EQ(fused.nan_count, nans);
    EXPECT_EQ(fused.inf_count, infs);
    EXPECT_EQ(fused.checksum, referenceChecksum(t));
    // Without the NaNs: min, max and the sums over the infinities.
    at::Tensor finite_or_inf = at::where(at::isnan(t), at::zeros_like(t), t);
    Stats f = tensorStatsFused(finite_or_inf);
    EXPECT_EQ(f.nan_count, 0u);
    EXPECT_EQ(f.inf_count, infs);
    EXPECT_EQ(f.min, -kInf);
    EXPECT_EQ(f.max, kInf);
  }
}

// The seven values of the fused pass's buffer, bit for bit.
std::vector<uint64_t> passBits(const at::Tensor& t) {
  double values[kDeviceStatsSize];
  fusedStatsInto(t, values);
  std::vector<uint64_t> bits(kDeviceStatsSize);
  std::memcpy(bits.data(), values, sizeof values);
  return bits;
}

// A strided view is read where it lies, through a buffer, in row-major
// order: exactly what its contiguous copy gives, sums included, for views
// of every shape (transposed, every third column, rows cut short, heads
// swapped as attention does, broadcast, permuted) and sizes around the
// buffer's 1,024 elements and the 32,768 up to which views are read in
// place.
TEST_F(TensorStatsTest, StridedViewsGiveExactlyTheirContiguousCopysStatistics) {
  const std::vector<at::ScalarType> types = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16,
                                             at::kInt, at::kLong, at::kShort, at::kChar, at::kByte, at::kBool};
  const std::vector<std::vector<int64_t>> shapes = {{3, 5}, {32, 32}, {33, 31}, {41, 53}, {180, 182}, {128, 256}, {300, 300}};
  for (at::ScalarType type : types) {
    for (const auto& shape : shapes) {
      SCOPED_TRACE(std::string(c10::toString(type)) + " " + std::to_string(shape[0]) + "x" + std::to_string(shape[1]));
      at::Tensor t = (at::randn(shape, at::kDouble) * 100).to(type);
      const std::vector<at::Tensor> views = {
          t.t(), t.slice(1, 0, t.size(1), 3), t.slice(0, 1, t.size(0), 2).t(), t.slice(1, 1, t.size(1) - 1),
          t.select(1, 2).unsqueeze(1).expand({t.size(0), 7}),
          t.reshape({-1}).slice(0, 0, t.numel() - t.numel() % 4).view({-1, 2, 2}).permute({2, 0, 1}),
          t.reshape({-1}).slice(0, 0, t.numel() - t.numel() % 8).view({-1, 2, 4}).transpose(0, 1),
          // rows of whole vector steps (attention's heads of 16)
          t.reshape({-1}).slice(0, 0, t.numel() - t.numel() % 32).view({-1, 2, 16}).transpose(0, 1),
          t.reshape({-1}).slice(0, 0, t.numel() - t.numel() % 96).view({-1, 3, 4, 8}).permute({1, 2, 0, 3})};
      for (const at::Tensor& view : views) {
        if (view.is_contiguous()) continue;  // a single row (3 x 5, every second row of 2)
        EXPECT_EQ(statsReadInPlace(view), view.numel() <= 32768);
        EXPECT_EQ(passBits(view), passBits(view.contiguous()));
        EXPECT_EQ(tensorStatsFused(view).checksum, referenceChecksum(view));
      }
    }
  }
  at::Tensor large = at::rand({300, 300}).t();
  EXPECT_FALSE(statsReadInPlace(large));
  EXPECT_TRUE(statsReadInPlace(at::rand({300, 300})));
  EXPECT_FALSE(statsReadInPlace(at::zeros({4, 4}, at::kComplexFloat)));
}

// float32's vector pass counts NaNs and infinities only when its sum says
// there are some, scanning again from the start (recorder/capture/cpu/
// fused_pass.cpp): the second scan of a strided view must start from its
// first element, and one non-finite element anywhere (the vector steps or
// the tail, the first buffer or the last) must be counted.
TEST_F(TensorStatsTest, NonFiniteElementsAreCountedWhereverTheyLie) {
  for (int64_t at_index : {int64_t{0}, int64_t{7}, int64_t{1500}, int64_t{180 * 182 - 1}}) {
    for (double bad : {kNaN, kInf, -kInf}) {
      SCOPED_TRACE(std::to_string(at_index) + " " + std::to_string(bad));
      at::Tensor t = at::randn({180, 182});
      t.view({-1})[at_index].fill_(bad);
      for (const at::Tensor& v : {t, t.t(), t.slice(1, 0, 182, 3)}) {
        const bool holds = at::isnan(v).any().item<bool>() || at::isinf(v).any().item<bool>();
        Stats s = tensorStatsFused(v);
        EXPECT_EQ(s.nan_count, at::isnan(v).sum().item<int64_t>());
        EXPECT_EQ(s.inf_count, at::isinf(v).sum().item<int64_t>());
        EXPECT_EQ(s.nan_count + s.inf_count, holds ? 1u : 0u);
        EXPECT_EQ(passBits(v), passBits(v.contiguous()));
        EXPECT_EQ(s.checksum, referenceChecksum(v));
      }
    }
  }
}

TEST_F(TensorStatsTest, TensorStatsDispatchesCpuToFused) {
  at::Tensor t = randomFloat(at::kFloat);
  Stats a = tensorStats(t);
  Stats f = tensorStatsFused(t);
  EXPECT_EQ(a.checksum, f.checksum);
  EXPECT_EQ(std::memcmp(&a.mean, &f.mean, sizeof(double)), 0);
}

}  // namespace
}  // namespace acc::recorder
