#include "analyzer/msprobe/statistics.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "analyzer/common/elements.h"
#include "analyzer/msprobe/dump_dir.h"

namespace acc::analyzer::msprobe {
namespace {

using format::Dtype;

// The element's bit pattern widened as the recorder widens it.
uint64_t widened(const char* p, size_t width) {
  switch (width) {
    case 1: return static_cast<uint8_t>(*p);
    case 2: { int16_t v; std::memcpy(&v, p, 2); return static_cast<uint64_t>(static_cast<int64_t>(v)); }
    case 4: { int32_t v; std::memcpy(&v, p, 4); return static_cast<uint64_t>(static_cast<int64_t>(v)); }
    default: { int64_t v; std::memcpy(&v, p, 8); return static_cast<uint64_t>(v); }
  }
}

uint64_t fnv(uint64_t h, const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

}  // namespace

format::Stats statsOfData(Dtype dtype, const std::string& data) {
  format::Stats s;
  const size_t width = realBytes(dtype);
  if (width == 0) return s;
  const size_t reals = data.size() / width;
  constexpr size_t kChunk = 4096;
  double values[kChunk];
  double min = std::numeric_limits<double>::infinity(), max = -min, sum = 0, sumsq = 0;
  for (size_t first = 0; first < reals; first += kChunk) {
    const size_t n = std::min(kChunk, reals - first);
    toDouble(data.data(), dtype, first, n, values);
    for (size_t k = 0; k < n; ++k) {
      const size_t i = first + k;
      s.checksum += widened(data.data() + i * width, width) * (2 * static_cast<uint64_t>(i) + 1);
      const double v = values[k];
      s.nan_count += v != v;
      s.inf_count += std::isinf(v);
      min = std::min(min, v);
      max = std::max(max, v);
      sum += v;
      sumsq += v * v;
    }
  }
  if (reals == 0) return s;
  const double q = std::numeric_limits<double>::quiet_NaN();
  const bool nan = s.nan_count != 0;
  s.min = nan ? q : min;
  s.max = nan ? q : max;
  s.mean = nan ? q : sum / static_cast<double>(reals);
  s.norm = nan ? q : std::sqrt(sumsq);
  return s;
}

format::Stats statsOfLeaf(const nlohmann::ordered_json& leaf, Dtype dtype, const std::vector<int64_t>& shape) {
  auto get = [&](const char* key) { return leaf.contains(key) ? number(leaf[key]) : std::nan(""); };
  format::Stats s;
  s.max = get("Max");
  s.min = get("Min");
  s.mean = get("Mean");
  s.norm = get("Norm");
  for (const char* key : {"Max", "Min", "Mean", "Norm"}) {
    // A statistic msprobe did not take is null (integers' mean, float64's
    // mean and norm); a NaN element makes it NaN.
    if (leaf.contains(key) && leaf[key].is_string() && leaf[key].get<std::string>() == "NaN") s.nan_count = 1;
  }
  for (double v : {s.max, s.min, s.mean, s.norm}) {
    if (std::isinf(v)) s.inf_count = 1;
  }
  uint64_t h = 14695981039346656037ull;
  const auto d = static_cast<uint8_t>(dtype);
  h = fnv(h, &d, 1);
  for (int64_t x : shape) h = fnv(h, &x, sizeof x);
  for (double v : {s.max, s.min, s.mean, s.norm}) h = fnv(h, &v, sizeof v);
  if (leaf.contains("md5") && leaf["md5"].is_string()) {
    const std::string& crc = leaf["md5"].get_ref<const std::string&>();
    h = fnv(h, crc.data(), crc.size());
  }
  s.checksum = h;
  return s;
}

}  // namespace acc::analyzer::msprobe
