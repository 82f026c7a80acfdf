// torch's element types and the format's, both ways (recorder and replay).
#pragma once

#include <c10/core/ScalarType.h>

#include "format/record.h"

namespace acc::recorder {

inline format::Dtype dtypeOf(c10::ScalarType type) {
  using D = format::Dtype;
  switch (type) {
    case c10::kBool: return D::Bool;
    case c10::kByte: return D::UInt8;
    case c10::kChar: return D::Int8;
    case c10::kShort: return D::Int16;
    case c10::kInt: return D::Int32;
    case c10::kLong: return D::Int64;
    case c10::kHalf: return D::Float16;
    case c10::kBFloat16: return D::BFloat16;
    case c10::kFloat: return D::Float32;
    case c10::kDouble: return D::Float64;
    case c10::kComplexFloat: return D::Complex64;
    case c10::kComplexDouble: return D::Complex128;
    default: return D::Unknown;
  }
}

// kUndefined for Dtype::Unknown.
inline c10::ScalarType scalarTypeOf(format::Dtype dtype) {
  using D = format::Dtype;
  switch (dtype) {
    case D::Bool: return c10::kBool;
    case D::UInt8: return c10::kByte;
    case D::Int8: return c10::kChar;
    case D::Int16: return c10::kShort;
    case D::Int32: return c10::kInt;
    case D::Int64: return c10::kLong;
    case D::Float16: return c10::kHalf;
    case D::BFloat16: return c10::kBFloat16;
    case D::Float32: return c10::kFloat;
    case D::Float64: return c10::kDouble;
    case D::Complex64: return c10::kComplexFloat;
    case D::Complex128: return c10::kComplexDouble;
    default: return c10::ScalarType::Undefined;
  }
}

}  // namespace acc::recorder
