#include "format/delta_map.h"

#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>

namespace acc::format {
namespace {

// IEEE's default environment for the scope: round to nearest, subnormals
// neither flushed nor read as zero (a program may have set either:
// torch.set_flush_denormal), restored after.
class DefaultRounding {
 public:
  DefaultRounding() {
    std::fegetenv(&saved_);
    std::fesetenv(FE_DFL_ENV);
  }
  ~DefaultRounding() { std::fesetenv(&saved_); }
  DefaultRounding(const DefaultRounding&) = delete;
  DefaultRounding& operator=(const DefaultRounding&) = delete;

 private:
  std::fenv_t saved_;
};

// A NaN's bits are the machine's where the operation makes one (x86's
// sqrt(-1) has the sign bit set, Arm's not) and the base's, quieted, where
// it passes one on: spelled out here, so that every machine agrees.
template <typename T, typename Bits>
Bits nanBits(T b) {
  constexpr Bits kQuiet = Bits(1) << (std::numeric_limits<T>::digits - 2);
  Bits bits;
  std::memcpy(&bits, &b, sizeof(T));
  if (b != b) return bits | kQuiet;
  const T q = std::numeric_limits<T>::quiet_NaN();
  std::memcpy(&bits, &q, sizeof(T));
  return bits;
}

template <typename T, typename Bits, typename Op>
void apply(const char* base, const char* other, char* out, size_t n, Op op) {
  for (size_t i = 0; i < n; ++i) {
    T b;
    Bits o;
    std::memcpy(&b, base + i * sizeof(T), sizeof(T));
    std::memcpy(&o, other + i * sizeof(T), sizeof(T));
    const T m = op(b);
    Bits mb;
    std::memcpy(&mb, &m, sizeof(T));
    if (m != m) mb = nanBits<T, Bits>(b);
    mb ^= o;
    std::memcpy(out + i * sizeof(T), &mb, sizeof(T));
  }
}

template <typename T, typename Bits>
void applyMap(const char* base, const char* other, char* out, size_t n, DeltaMap map, double scalar) {
  const T s = static_cast<T>(scalar);
  switch (map) {
    case DeltaMap::Multiply:
      apply<T, Bits>(base, other, out, n, [s](T b) { return b * s; });
      break;
    case DeltaMap::Add:
      apply<T, Bits>(base, other, out, n, [s](T b) { return b + s; });
      break;
    case DeltaMap::Divide:
      apply<T, Bits>(base, other, out, n, [s](T b) { return b / s; });
      break;
    case DeltaMap::Sqrt:
      apply<T, Bits>(base, other, out, n, [](T b) { return std::sqrt(b); });
      break;
    case DeltaMap::None:
      break;
  }
}

}  // namespace

bool deltaMapDefined(DeltaMap map, Dtype dtype, double scalar) {
  if (map == DeltaMap::None) return true;
  if (map != DeltaMap::Multiply && map != DeltaMap::Add && map != DeltaMap::Divide && map != DeltaMap::Sqrt) {
    return false;
  }
  return (dtype == Dtype::Float32 || dtype == Dtype::Float64) && std::isfinite(scalar);
}

void xorMapped(const char* base, const char* other, char* out, size_t size, Dtype dtype, DeltaMap map,
               double scalar) {
  size_t done = 0;
  if (map != DeltaMap::None && deltaMapDefined(map, dtype, scalar)) {
    const DefaultRounding rounding;
    if (dtype == Dtype::Float32) {
      applyMap<float, uint32_t>(base, other, out, size / 4, map, scalar);
      done = size / 4 * 4;
    } else {
      applyMap<double, uint64_t>(base, other, out, size / 8, map, scalar);
      done = size / 8 * 8;
    }
  }
  // A plain XOR (format v8), eight bytes at a time.
  for (; done + 8 <= size; done += 8) {
    uint64_t a, b;
    std::memcpy(&a, base + done, 8);
    std::memcpy(&b, other + done, 8);
    a ^= b;
    std::memcpy(out + done, &a, 8);
  }
  for (size_t i = done; i < size; ++i) out[i] = static_cast<char>(base[i] ^ other[i]);
}

}  // namespace acc::format
