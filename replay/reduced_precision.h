// Rounding float32 values to fewer mantissa bits, as a device computing
// float32 products in TF32 (10 bits) or bfloat16 (7 bits) does with its
// inputs: round to nearest, ties to even. Torch-free and header-only: the
// replay stage emulates such a device with it, and the test accelerator
// (tests/accelerator/testdev.cpp) is one.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace acc::replay {

inline float roundMantissa(float x, int bits) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u || bits <= 0 || bits >= 23) return x;  // Inf, NaN
  const int drop = 23 - bits;
  const uint32_t half = (uint32_t(1) << (drop - 1)) - 1 + ((u >> drop) & 1u);
  u = (u + half) & ~((uint32_t(1) << drop) - 1);
  std::memcpy(&x, &u, sizeof x);
  return x;
}

inline void roundMantissa(float* data, int64_t n, int bits) {
  for (int64_t i = 0; i < n; ++i) data[i] = roundMantissa(data[i], bits);
}

// Which arguments a reduced-precision matmul or convolution rounds: the
// factors of its products, not the bias or the matrix added to them
// (addmm's `self`), which the device adds in float32.
inline bool roundedArgument(const std::string& op, const std::string& argument) {
  if (argument == "bias") return false;
  if (argument == "self") {
    const std::string bare = op.substr(op.rfind(':') == std::string::npos ? 0 : op.rfind(':') + 1);
    return !(bare.rfind("addmm", 0) == 0 || bare.rfind("addbmm", 0) == 0 || bare.rfind("baddbmm", 0) == 0 ||
             bare.rfind("_addmm", 0) == 0);
  }
  return true;
}

}  // namespace acc::replay
