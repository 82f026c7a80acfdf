// recorder/watch/finite_check.h on the CPU: the exponent-bit scan agrees with
// torch's isfinite/isnan for every floating type, wherever the bad element
// lies (first, last, past a block and a chunk boundary), in strided views,
// and tells a NaN from an infinity; half and bfloat16 overflow counts while
// their largest finite values do not.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

#include "recorder/watch/finite_check.h"

namespace acc::recorder {
namespace {

Finiteness expected(const at::Tensor& t) {
  if (at::isnan(t).any().item<bool>()) return Finiteness::NaN;
  if (at::isinf(t).any().item<bool>()) return Finiteness::Infinite;
  return Finiteness::Finite;
}

TEST(FiniteCheck, AgreesWithTorchForEveryTypeAndPosition) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (at::ScalarType type : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    for (int64_t n : {int64_t{1}, int64_t{1023}, int64_t{1024}, int64_t{5000}, (int64_t{1} << 18) + 7}) {
      for (int64_t at_index : {int64_t{0}, n / 2, n - 1}) {
        for (double bad : {inf, -inf, nan}) {
          at::Tensor t = at::ones({n}, at::TensorOptions().dtype(type));
          EXPECT_EQ(hostFiniteness(t), Finiteness::Finite);
          t[at_index] = bad;
          SCOPED_TRACE(testing::Message() << c10::toString(type) << " n " << n << " at " << at_index << " " << bad);
          EXPECT_EQ(hostFiniteness(t), expected(t));
          EXPECT_FALSE(hostAllFinite(t));
        }
      }
    }
  }
}

TEST(FiniteCheck, StridedViewsSeeOnlyTheirElements) {
  at::Tensor base = at::ones({64, 64});
  base[3][5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(hostFiniteness(base.narrow(1, 6, 10)), Finiteness::Finite);  // column 5 left out
  EXPECT_EQ(hostFiniteness(base.t()), Finiteness::NaN);
  EXPECT_EQ(hostFiniteness(base.narrow(1, 0, 10)), Finiteness::NaN);
}

TEST(FiniteCheck, HalfAndBfloat16OverflowButTheirLargestValuesAreFinite) {
  for (at::ScalarType type : {at::kHalf, at::kBFloat16}) {
    const double max = type == at::kHalf ? 65504.0 : 3.3895313892515355e38;
    at::Tensor big = at::full({16}, max, at::TensorOptions().dtype(type));
    EXPECT_EQ(hostFiniteness(big), Finiteness::Finite);
    EXPECT_EQ(hostFiniteness(big * 2), Finiteness::Infinite);
    EXPECT_EQ(extremesFiniteness(at::stack({(big * 2).min(), (big * 2).max()})), Finiteness::Infinite);
  }
}

TEST(FiniteCheck, ExtremesTellANaNFromAnInfinity) {
  at::Tensor t = at::ones({100});
  t[7] = -std::numeric_limits<float>::infinity();
  auto [min, max] = at::aminmax(t);
  EXPECT_EQ(extremesFiniteness(at::stack({min, max})), Finiteness::Infinite);
  t[9] = std::numeric_limits<float>::quiet_NaN();
  auto [min2, max2] = at::aminmax(t);
  EXPECT_EQ(extremesFiniteness(at::stack({min2, max2})), Finiteness::NaN);
  EXPECT_EQ(finitenessNow(t), Finiteness::NaN);
}

}  // namespace
}  // namespace acc::recorder
