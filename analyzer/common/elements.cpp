#include "analyzer/common/elements.h"

#if defined(__x86_64__)
#include <cstdint>
#include <immintrin.h>
#endif

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

void floatsToDouble(const char* p, size_t count, double* out) {
  for (size_t i = 0; i < count; ++i) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    out[i] = f;
  }
}

void bfloat16sToDouble(const char* p, size_t count, double* out) {
  for (size_t i = 0; i < count; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    out[i] = f;
  }
}

// float32 and bfloat16 are the dtypes most comparisons read, and the
// conversion is a third of compare's time when the compiler leaves it
// scalar. Both widen exactly, like the loops above.
#if defined(__x86_64__)
__attribute__((target("avx2"))) void floatsToDoubleAvx2(const char* p, size_t count, double* out) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 v = _mm256_loadu_ps(reinterpret_cast<const float*>(p + 4 * i));
    _mm256_storeu_pd(out + i, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    _mm256_storeu_pd(out + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }
  floatsToDouble(p + 4 * i, count - i, out + i);
}

__attribute__((target("avx2"))) void bfloat16sToDoubleAvx2(const char* p, size_t count, double* out) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i));
    const __m256 v = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    _mm256_storeu_pd(out + i, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    _mm256_storeu_pd(out + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }
  bfloat16sToDouble(p + 2 * i, count - i, out + i);
}

const bool kAvx2 = __builtin_cpu_supports("avx2");
#else
void floatsToDoubleAvx2(const char* p, size_t count, double* out) { floatsToDouble(p, count, out); }
void bfloat16sToDoubleAvx2(const char* p, size_t count, double* out) { bfloat16sToDouble(p, count, out); }
const bool kAvx2 = false;
#endif

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
    case Dtype::BFloat16:
      return (kAvx2 ? bfloat16sToDoubleAvx2 : bfloat16sToDouble)(bytes + first * 2, count, out);
    case Dtype::Float32:
    case Dtype::Complex64: return (kAvx2 ? floatsToDoubleAvx2 : floatsToDouble)(bytes + first * 4, count, out);
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
