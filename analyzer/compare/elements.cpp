#include "analyzer/compare/elements.h"

#include <cstring>

namespace acc::analyzer {
namespace {

using format::Dtype;

template <typename T>
void convert(const char* bytes, size_t first, size_t count, double* out) {
  const char* p = bytes + first * sizeof(T);
  for (size_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

double halfToDouble(uint16_t h) {
  const uint32_t sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double v;
  if (exponent == 0) {
    v = static_cast<double>(mantissa) * (1.0 / 16777216.0);  // 2^-24: subnormal
  } else if (exponent == 31) {
    v = mantissa ? __builtin_nan("") : __builtin_inf();
  } else {
    uint64_t bits = (static_cast<uint64_t>(exponent - 15 + 1023) << 52) | (static_cast<uint64_t>(mantissa) << 42);
    std::memcpy(&v, &bits, sizeof v);
  }
  return sign ? -v : v;
}

}  // namespace

bool isComplex(Dtype d) { return d == Dtype::Complex64 || d == Dtype::Complex128; }

bool isFloating(Dtype d) {
  return d == Dtype::Float16 || d == Dtype::BFloat16 || d == Dtype::Float32 || d == Dtype::Float64 ||
         isComplex(d);
}

size_t realsPerElement(Dtype d) {
  if (d == Dtype::Unknown) return 0;
  return isComplex(d) ? 2 : 1;
}

size_t realBytes(Dtype d) {
  size_t r = realsPerElement(d);
  return r ? format::dtypeSize(d) / r : 0;
}

void toDouble(const char* bytes, Dtype d, size_t first, size_t count, double* out) {
  switch (d) {
    case Dtype::Bool:
      for (size_t i = 0; i < count; ++i) out[i] = bytes[first + i] != 0 ? 1.0 : 0.0;
      return;
    case Dtype::UInt8: return convert<uint8_t>(bytes, first, count, out);
    case Dtype::Int8: return convert<int8_t>(bytes, first, count, out);
    case Dtype::Int16: return convert<int16_t>(bytes, first, count, out);
    case Dtype::Int32: return convert<int32_t>(bytes, first, count, out);
    case Dtype::Int64: return convert<int64_t>(bytes, first, count, out);
    case Dtype::Float16: {
      const char* p = bytes + first * 2;
      for (size_t i = 0; i < count; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = halfToDouble(h);
      }
      return;
    }
    case Dtype::BFloat16: {
      const char* p = bytes + first * 2;
      for (size_t i = 0; i < count; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        uint32_t bits = static_cast<uint32_t>(h) << 16;
        float f;
        std::memcpy(&f, &bits, sizeof f);
        out[i] = f;
      }
      return;
    }
    case Dtype::Float32:
    case Dtype::Complex64: return convert<float>(bytes, first, count, out);
    case Dtype::Float64:
    case Dtype::Complex128: return convert<double>(bytes, first, count, out);
    case Dtype::Unknown: break;
  }
  for (size_t i = 0; i < count; ++i) out[i] = 0;
}

FloatFormat floatFormat(Dtype d) {
  switch (d) {
    case Dtype::Float16: return {11, -13};
    case Dtype::BFloat16: return {8, -125};
    case Dtype::Float32:
    case Dtype::Complex64: return {24, -125};
    case Dtype::Float64:
    case Dtype::Complex128: return {53, -1021};
    default: return {0, 0};
  }
}

}  // namespace acc::analyzer
