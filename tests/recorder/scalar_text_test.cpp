// Scalar arguments are recorded as text: a double with 17 significant
// digits as printf's %.17g writes it, always recognisable as a float.
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

}  // namespace
}  // namespace acc::recorder
