// Tensor elements as float64: the common precision every pair is compared in.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/record.h"

namespace acc::analyzer {

// Reals per element: 2 for complex dtypes (compared as pairs of reals, as the
// recorder's statistics are), 1 otherwise, 0 for unknown dtypes.
size_t realsPerElement(format::Dtype d);
size_t realBytes(format::Dtype d);  // bytes of one real component
bool isComplex(format::Dtype d);
bool isFloating(format::Dtype d);  // float16, bfloat16, float32, float64, complex

// Converts `count` reals starting at real index `first` of the row-major
// little-endian data `bytes` of dtype `d` into `out`.
void toDouble(const char* bytes, format::Dtype d, size_t first, size_t count, double* out);

// Binary floating-point parameters in std::numeric_limits terms: `digits`
// significand bits (with the implicit one) and `min_exponent` (frexp
// convention: the smallest normal number is 2^(min_exponent - 1)).
struct FloatFormat {
  int digits = 0;  // 0: integer or bool (one ULP is 1)
  int min_exponent = 0;
};
FloatFormat floatFormat(format::Dtype d);  // complex: of one component

}  // namespace acc::analyzer
