#include "recorder/watch/finite_check.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>

#include "recorder/capture/cpu/stats_pool.h"
#include "recorder/capture/tensor_capture.h"

namespace acc::recorder {
namespace {

// Elements per chunk: large tensors are scanned by the stats pool's threads.
constexpr int64_t kChunk = int64_t{1} << 18;

// An element is NaN or infinite exactly when its exponent bits are all
// ones. Blocks of a fixed count with a branch-free body vectorize at GCC's
// -O2 (a loop of variable count does not, and ran 4.5x slower); a block
// with a hit ends the scan.
template <typename Bits>
bool exponentsFinite(const Bits* bits, int64_t n, Bits exponent) {
  constexpr int64_t kBlock = 1024;
  int64_t begin = 0;
  for (; begin + kBlock <= n; begin += kBlock) {
    const Bits* block = bits + begin;
    Bits any = 0;
    for (int64_t i = 0; i < kBlock; ++i) any |= static_cast<Bits>((block[i] & exponent) == exponent);
    if (any != 0) return false;
  }
  Bits any = 0;
  for (int64_t i = begin; i < n; ++i) any |= static_cast<Bits>((bits[i] & exponent) == exponent);
  return any == 0;
}

template <typename Bits>
bool scan(const Bits* bits, int64_t n, Bits exponent) {
  if (n <= kChunk) return exponentsFinite(bits, n, exponent);
  std::atomic<bool> finite{true};
  StatsPool::shared().run((n + kChunk - 1) / kChunk, [&](int64_t c) {
    if (!finite.load(std::memory_order_relaxed)) return;
    const int64_t begin = c * kChunk;
    if (!exponentsFinite(bits + begin, std::min(kChunk, n - begin), exponent)) {
      finite.store(false, std::memory_order_relaxed);
    }
  });
  return finite.load();
}

// Whether any element is NaN: all exponent bits and some mantissa bit set,
// so the bits without the sign exceed the infinity's. Only after a scan
// found something, so no hurry.
template <typename Bits>
bool anyNan(const Bits* bits, int64_t n, Bits exponent) {
  const Bits magnitude = static_cast<Bits>(static_cast<Bits>(~Bits{0}) >> 1);  // all but the sign
  for (int64_t i = 0; i < n; ++i) {
    if ((bits[i] & magnitude) > exponent) return true;
  }
  return false;
}

// The tensor's real view, dense: numel elements from its data pointer on,
// in some order (contiguous, channels-last, any permutation).
at::Tensor denseReal(const at::Tensor& tensor) {
  at::Tensor t = tensor.is_complex() ? at::view_as_real(tensor) : tensor;
  return t.is_non_overlapping_and_dense() ? t : t.contiguous();
}

// Runs `test(bits, n, exponent)` over a dense real tensor's elements as
// unsigned integers, for the types whose NaN and infinities are exactly the
// all-ones exponents; nullopt for the rest (float8 and rarer types), which
// take torch's own tests.
template <typename Test>
std::optional<bool> overBits(const at::Tensor& t, Test test) {
  const void* data = t.data_ptr();
  const int64_t n = t.numel();
  switch (t.scalar_type()) {
    case at::kFloat: return test(static_cast<const uint32_t*>(data), n, uint32_t{0x7f800000u});
    case at::kDouble: return test(static_cast<const uint64_t*>(data), n, uint64_t{0x7ff0000000000000ull});
    case at::kHalf: return test(static_cast<const uint16_t*>(data), n, uint16_t{0x7c00});
    case at::kBFloat16: return test(static_cast<const uint16_t*>(data), n, uint16_t{0x7f80});
    default: return std::nullopt;
  }
}

bool denseAllFinite(const at::Tensor& t) {
  const std::optional<bool> finite =
      overBits(t, [](const auto* bits, int64_t n, auto exponent) { return scan(bits, n, exponent); });
  return finite ? *finite : at::isfinite(t).all().item<bool>();
}

}  // namespace

bool checkable(const at::Tensor& t) {
  return t.defined() && (t.is_floating_point() || t.is_complex()) && t.numel() > 0 && readable(t);
}

bool hostAllFinite(const at::Tensor& tensor) { return denseAllFinite(denseReal(tensor)); }

Finiteness hostFiniteness(const at::Tensor& tensor) {
  const at::Tensor t = denseReal(tensor);
  if (denseAllFinite(t)) return Finiteness::Finite;
  const std::optional<bool> nan =
      overBits(t, [](const auto* bits, int64_t n, auto exponent) { return anyNan(bits, n, exponent); });
  return (nan ? *nan : at::isnan(t).any().item<bool>()) ? Finiteness::NaN : Finiteness::Infinite;
}

void deviceExtremes(const at::Tensor& tensor, std::vector<at::Tensor>& out) {
  const at::Tensor t = tensor.is_complex() ? at::view_as_real(tensor) : tensor;
  auto [min, max] = at::aminmax(t);
  out.push_back(std::move(min));
  out.push_back(std::move(max));
}

Finiteness extremesFiniteness(const at::Tensor& host) {
  return hostFiniteness(host.dim() == 0 ? host.reshape({1}) : host);
}

Finiteness finitenessNow(const at::Tensor& t) {
  if (t.device().is_cpu()) return hostFiniteness(t);
  std::vector<at::Tensor> extremes;
  deviceExtremes(t, extremes);
  return extremesFiniteness(at::stack(extremes).cpu());
}

}  // namespace acc::recorder
