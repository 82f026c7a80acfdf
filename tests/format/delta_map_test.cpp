// Format v9's mapped deltas (format/delta_map.h): what a reader undoes is
// exactly what the recorder did, so every value comes back bit for bit,
// whatever the values (NaN, infinities, subnormals, negative square roots)
// and whatever rounding the program left set; and a correct kernel's output
// XORs to zeros.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "format/delta_map.h"

namespace acc::format {
namespace {

template <typename T>
std::vector<T> awkwardValues(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(normal(rng));
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), -std::numeric_limits<T>::quiet_NaN(),
                        std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                        std::numeric_limits<T>::denorm_min(), -std::numeric_limits<T>::denorm_min() * 3,
                        std::numeric_limits<T>::min() / 2, std::numeric_limits<T>::max(), T(0), -T(0), T(-4)};
  for (size_t i = 0; i < sizeof specials / sizeof specials[0] && i < n; ++i) v[i * 7 % n] = specials[i];
  if (n > 500) {
    v[5] = T(2.5);  // made wrong below
    v[500] = T(4);
  }
  return v;
}

template <typename T>
std::string bytesOf(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

struct Case {
  DeltaMap map;
  double scalar;
};
const Case kCases[] = {{DeltaMap::Multiply, 0.9}, {DeltaMap::Multiply, 0.99999}, {DeltaMap::Add, 1e-8},
                       {DeltaMap::Divide, 1.7320508075688772}, {DeltaMap::Divide, 0.0}, {DeltaMap::Sqrt, 0.0}};

template <typename T>
T computed(DeltaMap map, T b, double scalar) {
  const T s = static_cast<T>(scalar);
  switch (map) {
    case DeltaMap::Multiply: return b * s;
    case DeltaMap::Add: return b + s;
    case DeltaMap::Divide: return b / s;
    case DeltaMap::Sqrt: return std::sqrt(b);
    default: return b;
  }
}

template <typename T>
void roundTrips(Dtype dtype) {
  const std::vector<T> base = awkwardValues<T>(999, 1);
  for (const Case& c : kCases) {
    ASSERT_TRUE(deltaMapDefined(c.map, dtype, c.scalar));
    // What a kernel wrote: the op's result, a few elements off by an ulp
    // (a kernel that rounds otherwise) and one unrelated value.
    std::vector<T> out(base.size());
    for (size_t i = 0; i < base.size(); ++i) out[i] = computed(c.map, base[i], c.scalar);
    out[5] = std::nextafter(out[5], T(0));
    out[500] = T(123.25);
    const std::string values = bytesOf(out);
    std::string stored(values.size(), '\0');
    xorMapped(bytesOf(base).data(), values.data(), stored.data(), values.size(), dtype, c.map, c.scalar);
    // Undone in place, as readers do.
    std::string back = stored;
    xorMapped(bytesOf(base).data(), back.data(), back.data(), back.size(), dtype, c.map, c.scalar);
    EXPECT_TRUE(back == values) << static_cast<int>(c.map) << " " << c.scalar;
    // The correct elements XOR to zeros, NaNs made by the op aside (their
    // bits are the machine's): all but the two made wrong.
    size_t correct = 0, zero = 0;
    const std::string zeros(sizeof(T), '\0');
    for (size_t i = 0; i < out.size(); ++i) {
      if (std::isnan(out[i]) && !std::isnan(base[i])) continue;
      ++correct;
      zero += std::memcmp(stored.data() + i * sizeof(T), zeros.data(), sizeof(T)) == 0;
    }
    EXPECT_GT(correct, out.size() / 3);
    EXPECT_EQ(zero, correct - 2) << static_cast<int>(c.map) << " " << c.scalar;
  }
}

TEST(DeltaMap, Float32RoundTripsBitForBit) { roundTrips<float>(Dtype::Float32); }
TEST(DeltaMap, Float64RoundTripsBitForBit) { roundTrips<double>(Dtype::Float64); }

TEST(DeltaMap, OnlyFloatsAndFiniteScalars) {
  EXPECT_FALSE(deltaMapDefined(DeltaMap::Multiply, Dtype::BFloat16, 0.9));
  EXPECT_FALSE(deltaMapDefined(DeltaMap::Multiply, Dtype::Int64, 2));
  EXPECT_FALSE(deltaMapDefined(DeltaMap::Add, Dtype::Float32, std::nan("")));
  EXPECT_FALSE(deltaMapDefined(DeltaMap::Divide, Dtype::Float32, INFINITY));
  EXPECT_FALSE(deltaMapDefined(static_cast<DeltaMap>(9), Dtype::Float32, 1));
  EXPECT_TRUE(deltaMapDefined(DeltaMap::None, Dtype::Int64, 0));
  // An undefined map is a plain XOR.
  const std::string a = "abcdefgh", b = "12345678";
  std::string out(8, '\0');
  xorMapped(a.data(), b.data(), out.data(), 8, Dtype::Int64, DeltaMap::Multiply, 2);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(out[i], static_cast<char>(a[i] ^ b[i]));
}

// A program that flushes subnormals (torch.set_flush_denormal(True)) or
// rounds otherwise records what a reader in the default environment reads.
TEST(DeltaMap, TheProgramsRoundingDoesNotChangeTheMap) {
  const std::vector<float> base = awkwardValues<float>(257, 2);
  const std::string values = bytesOf(std::vector<float>(base.size(), 1.0f));
  std::string plain(values.size(), '\0'), odd(values.size(), '\0');
  xorMapped(bytesOf(base).data(), values.data(), plain.data(), values.size(), Dtype::Float32, DeltaMap::Multiply,
            0.1);
  std::fenv_t saved;
  std::fegetenv(&saved);
  std::fesetround(FE_UPWARD);
#if defined(__x86_64__)
  _mm_setcsr(_mm_getcsr() | 0x8040);  // flush to zero, denormals are zero
#endif
  xorMapped(bytesOf(base).data(), values.data(), odd.data(), values.size(), Dtype::Float32, DeltaMap::Multiply, 0.1);
  const int round = std::fegetround();
#if defined(__x86_64__)
  const unsigned csr = _mm_getcsr();
#endif
  std::fesetenv(&saved);
  EXPECT_TRUE(plain == odd);
  EXPECT_EQ(round, FE_UPWARD);  // and the program's environment is given back
#if defined(__x86_64__)
  EXPECT_EQ(csr & 0x8040u, 0x8040u);
#endif
}

}  // namespace
}  // namespace acc::format
