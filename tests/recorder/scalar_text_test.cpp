// Scalar arguments are recorded as text: a double with 17 significant
// digits as printf's %.17g writes it, always recognisable as a float. (And
// a tensor's device as its name, in a pooled record's buffers.)
// Recordings of different acc versions are compared, so the spelling must
// not change with how it is produced.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "recorder/capture/tensor_capture.h"
#include "recorder/write/record_pool.h"

namespace acc::recorder {
namespace {

std::string recorded(const c10::IValue& value) {
  CapturedOp record;
  captureValue(value, format::Role::Input, 0, Capture{}, record);
  return record.scalars.empty() ? "(none)" : record.scalars[0].value;
}

std::string printfText(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  std::string text = buffer;
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

TEST(ScalarTextTest, DoublesAreSpelledAsPrintfsSeventeenDigits) {
  std::vector<double> values = {0.0, -0.0, 1.0, -2.0, 0.1, 1e-3, 0.9, 0.999, 1e-8, 3e38, 1e20, 1e16,
                                123456789012345678.0, 1e-300, 5e-324, std::numeric_limits<double>::max(),
                                std::numeric_limits<double>::min(), 0.5, 2.5e-5, 100.0, 1e17, 1e-5};
  std::mt19937_64 random(7);
  for (int i = 0; i < 2000; ++i) {
    uint64_t bits = random();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    if (std::isfinite(v)) values.push_back(v);
    values.push_back(std::ldexp(static_cast<double>(random() % 100000), -static_cast<int>(random() % 40)));
  }
  for (double v : values) {
    EXPECT_EQ(recorded(c10::IValue(v)), printfText(v)) << v;
    EXPECT_EQ(recorded(c10::IValue(at::Scalar(v))), printfText(v)) << v;
  }
  EXPECT_EQ(recorded(c10::IValue(1.0)), "1.0");
  EXPECT_EQ(recorded(c10::IValue(0.1)), "0.10000000000000001");
  EXPECT_EQ(recorded(c10::IValue(1e20)), "1e+20");
  EXPECT_EQ(recorded(c10::IValue(std::numeric_limits<double>::quiet_NaN())), "nan");
  EXPECT_EQ(recorded(c10::IValue(-std::numeric_limits<double>::infinity())), "-inf");
  EXPECT_EQ(recorded(c10::IValue(std::vector<double>{0.5, 2.0})), "[0.5, 2.0]");
}

// The texts of recent numbers are kept per thread by their bits: a number
// recorded again, whatever came between (thousands, most sharing a slot
// with others), is spelled as the first time.
TEST(ScalarTextTest, ANumberRecordedAgainIsSpelledTheSame) {
  std::vector<double> values = {0.9, 0.999, 1e-3, -0.0, 0.0, 1.0 - 0.9, 1e-8};
  std::mt19937_64 random(11);
  for (int i = 0; i < 500; ++i) values.push_back(std::ldexp(static_cast<double>(random() % 1000), -10));
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < values.size(); ++i) {
      const double v = values[round == 1 ? values.size() - 1 - i : i];
      EXPECT_EQ(recorded(c10::IValue(v)), printfText(v)) << v << " in round " << round;
      EXPECT_EQ(recorded(c10::IValue(at::Scalar(v))), printfText(v)) << v << " in round " << round;
    }
  }
}

// A recycled record's tensor keeps the last device name it held (the pool
// leaves it for the capture to compare): a CPU tensor captured into one
// that held a device tensor is named "cpu".
TEST(ScalarTextTest, APooledTensorTakesItsNewDevicesName) {
  std::unique_ptr<CapturedOp> r = record_pool::take();
  record_pool::appendTensor(*r).device = "privateuseone:0";
  record_pool::recycle(std::move(r));
  r = record_pool::take();
  captureValue(c10::IValue(at::ones({2})), format::Role::Input, 0, Capture{}, *r);
  ASSERT_EQ(r->tensors.size(), 1u);
  EXPECT_EQ(r->tensors[0].device, "cpu");
  record_pool::recycle(std::move(r));
}

}  // namespace
}  // namespace acc::recorder
