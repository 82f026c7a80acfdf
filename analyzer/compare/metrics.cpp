#include "analyzer/compare/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace acc::analyzer {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// 2^-k for the ULP of `x`: a ULP of the format at |x| is 2^(e - digits)
// with |x| in [2^(e-1), 2^e), e clamped to the format's min_exponent.
inline double inverseUlp(double x, const FloatFormat& f) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int biased = static_cast<int>((bits >> 52) & 0x7ff);
  int e = biased == 0 ? -1022 : biased - 1022;
  int k = std::max(e, f.min_exponent) - f.digits;
  if (k >= -1022 && k <= 1022) {
    uint64_t inv = static_cast<uint64_t>(1023 - k) << 52;
    double v;
    std::memcpy(&v, &inv, sizeof v);
    return v;
  }
  return std::ldexp(1.0, -k);
}

// The same when 2^-k is a normal double for every x (all formats but float64).
inline double inverseUlpInRange(double x, const FloatFormat& f) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int biased = static_cast<int>((bits >> 52) & 0x7ff);
  int e = biased - 1022;
  int k = (e > f.min_exponent ? e : f.min_exponent) - f.digits;
  uint64_t inv = static_cast<uint64_t>(1023 - k) << 52;
  double v;
  std::memcpy(&v, &inv, sizeof v);
  return v;
}

}  // namespace

void MetricAccumulator::add(const double* b, const double* t, size_t count, const MetricParams& p) {
  // Blocks without NaN or Inf (the usual case) take a branch-free loop with
  // independent accumulators the compiler can keep in registers.
  constexpr uint64_t kExponent = 0x7ff0000000000000ULL;
  uint64_t special = 0;
  for (size_t i = 0; i < count; ++i) {
    uint64_t x, y;
    std::memcpy(&x, b + i, 8);
    std::memcpy(&y, t + i, 8);
    special |= static_cast<uint64_t>((x & kExponent) == kExponent) | static_cast<uint64_t>((y & kExponent) == kExponent);
  }
  if (special) return addWithSpecials(b, t, count, p);
  size_t done;
  if (p.ulp_format.digits == 0) {
    done = addFinite<UlpMode::Integer>(b, t, count, p);
  } else if (p.ulp_format.min_exponent - p.ulp_format.digits >= -1022) {
    done = addFinite<UlpMode::InRange>(b, t, count, p);
  } else {
    done = addFinite<UlpMode::General>(b, t, count, p);
  }
  total_ += done;
  if (done < count) addWithSpecials(b + done, t + done, count - done, p);
}

template <MetricAccumulator::UlpMode kMode>
size_t MetricAccumulator::addFinite(const double* b, const double* t, size_t count, const MetricParams& p) {
  constexpr size_t kLanes = 4;
  double sum_abs[kLanes] = {}, sum_sq[kLanes] = {}, sum_b2[kLanes] = {}, sum_t2[kLanes] = {}, dot[kLanes] = {};
  double max_abs[kLanes] = {}, max_rel[kLanes] = {}, max_ulp[kLanes] = {};
  uint64_t within1[kLanes] = {}, within5[kLanes] = {};
  const double small = p.small;
  const FloatFormat f = p.ulp_format;
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
#pragma GCC unroll 4
    for (size_t l = 0; l < kLanes; ++l) {
      const double x = b[i + l], y = t[i + l];
      const double d = y - x, a = std::fabs(d);
      sum_abs[l] += a;
      sum_sq[l] += d * d;
      sum_b2[l] += x * x;
      sum_t2[l] += y * y;
      dot[l] += x * y;
      max_abs[l] = a > max_abs[l] ? a : max_abs[l];
      const double ax = std::fabs(x);
      const double rel = a / (ax > small ? ax : small);
      max_rel[l] = rel > max_rel[l] ? rel : max_rel[l];
      within1[l] += rel <= 1e-3;
      within5[l] += rel <= 5e-3;
      double ulps;
      if constexpr (kMode == UlpMode::Integer) ulps = a;
      else if constexpr (kMode == UlpMode::InRange) ulps = a * inverseUlpInRange(x, f);
      else ulps = a * inverseUlp(x, f);
      max_ulp[l] = ulps > max_ulp[l] ? ulps : max_ulp[l];
    }
  }
  finite_ += i;
  for (size_t l = 0; l < kLanes; ++l) {
    sum_abs_ += sum_abs[l];
    sum_sq_ += sum_sq[l];
    sum_b2_ += sum_b2[l];
    sum_t2_ += sum_t2[l];
    dot_ += dot[l];
    max_abs_ = std::max(max_abs_, max_abs[l]);
    max_rel_ = std::max(max_rel_, max_rel[l]);
    max_ulp_ = std::max(max_ulp_, max_ulp[l]);
    within1_ += within1[l];
    within5_ += within5[l];
  }
  return i;
}

void MetricAccumulator::addWithSpecials(const double* b, const double* t, size_t count, const MetricParams& p) {
  const bool integer = p.ulp_format.digits == 0;
  total_ += count;
  for (size_t i = 0; i < count; ++i) {
    const double x = b[i], y = t[i];
    if (!std::isfinite(x) || !std::isfinite(y)) {
      const bool nx = std::isnan(x), ny = std::isnan(y);
      if (nx || ny) {
        if (nx && ny) ++agree_;
        else ++nan_mismatch_;
      } else if (x == y) {
        ++agree_;  // the same infinity
      } else {
        ++inf_mismatch_;
      }
      continue;
    }
    ++finite_;
    const double d = y - x, a = std::fabs(d);
    sum_abs_ += a;
    sum_sq_ += d * d;
    sum_b2_ += x * x;
    sum_t2_ += y * y;
    dot_ += x * y;
    max_abs_ = std::max(max_abs_, a);
    const double rel = a / std::max(std::fabs(x), p.small);
    max_rel_ = std::max(max_rel_, rel);
    within1_ += rel <= 1e-3;
    within5_ += rel <= 5e-3;
    const double ulps = integer ? a : a * inverseUlp(x, p.ulp_format);
    max_ulp_ = std::max(max_ulp_, ulps);
  }
}

void MetricAccumulator::merge(const MetricAccumulator& o) {
  total_ += o.total_;
  finite_ += o.finite_;
  agree_ += o.agree_;
  nan_mismatch_ += o.nan_mismatch_;
  inf_mismatch_ += o.inf_mismatch_;
  within1_ += o.within1_;
  within5_ += o.within5_;
  sum_abs_ += o.sum_abs_;
  sum_sq_ += o.sum_sq_;
  sum_b2_ += o.sum_b2_;
  sum_t2_ += o.sum_t2_;
  dot_ += o.dot_;
  max_abs_ = std::max(max_abs_, o.max_abs_);
  max_rel_ = std::max(max_rel_, o.max_rel_);
  max_ulp_ = std::max(max_ulp_, o.max_ulp_);
}

TensorMetrics MetricAccumulator::finish(const MetricParams& p) const {
  TensorMetrics m;
  m.compared = true;
  m.nan_mismatch = nan_mismatch_;
  m.inf_mismatch = inf_mismatch_;
  m.max_abs = max_abs_;
  m.max_rel = max_rel_;
  m.max_ulp = max_ulp_;
  if (finite_ > 0) {
    const double n = static_cast<double>(finite_);
    m.mean_abs = sum_abs_ / n;
    m.rmse = std::sqrt(sum_sq_ / n);
    const double norm_d = std::sqrt(sum_sq_), norm_b = std::sqrt(sum_b2_), norm_t = std::sqrt(sum_t2_);
    m.rel_l2 = norm_d == 0 ? 0 : norm_d / std::max(norm_b, p.small * std::sqrt(n));
    if (norm_b == 0 && norm_t == 0) m.cosine = 1;
    else if (norm_b == 0 || norm_t == 0) m.cosine = kNaN;
    else m.cosine = std::clamp(dot_ / (norm_b * norm_t), -1.0, 1.0);
  }
  if (total_ > 0) {
    const double n = static_cast<double>(total_);
    m.within_1e3 = static_cast<double>(within1_ + agree_) / n;
    m.within_5e3 = static_cast<double>(within5_ + agree_) / n;
  }
  return m;
}

TensorMetrics elementMetrics(const char* data0, format::Dtype d0, const char* data1, format::Dtype d1,
                             size_t reals, const MetricParams& p) {
  constexpr size_t kChunk = 4096;
  std::vector<double> b(kChunk), t(kChunk);
  MetricAccumulator acc;
  for (size_t first = 0; first < reals; first += kChunk) {
    size_t n = std::min(kChunk, reals - first);
    toDouble(data0, d0, first, n, b.data());
    toDouble(data1, d1, first, n, t.data());
    acc.add(b.data(), t.data(), n, p);
  }
  return acc.finish(p);
}

TensorMetrics statsMetrics(const format::Stats& s0, const format::Stats& s1, bool same_bits_layout,
                           uint64_t reals, double small) {
  TensorMetrics m;
  m.compared = true;
  m.from_stats = true;
  m.nan_mismatch = s0.nan_count > s1.nan_count ? s0.nan_count - s1.nan_count : s1.nan_count - s0.nan_count;
  m.inf_mismatch = s0.inf_count > s1.inf_count ? s0.inf_count - s1.inf_count : s1.inf_count - s0.inf_count;
  m.cosine = m.max_rel = m.within_1e3 = m.within_5e3 = m.max_ulp = kNaN;
  if (same_bits_layout && s0.checksum == s1.checksum && s0.nan_count == s1.nan_count &&
      s0.inf_count == s1.inf_count) {
    // Bit-identical contents: every metric takes its perfect value.
    m.checksum_equal = true;
    m.cosine = 1;
    m.max_rel = 0;
    m.within_1e3 = m.within_5e3 = 1;
    m.max_ulp = 0;
    m.max_abs = m.mean_abs = m.rmse = m.rel_l2 = m.stat_error = 0;
    return m;
  }
  const double n = std::max<double>(1, static_cast<double>(reals));
  auto finite2 = [](double a, double b) { return std::isfinite(a) && std::isfinite(b); };
  double e_norm = kNaN, e_mean = kNaN, e_ext = kNaN;
  m.max_abs = m.mean_abs = m.rmse = m.rel_l2 = kNaN;
  if (finite2(s0.norm, s1.norm)) {
    const double dn = std::fabs(s1.norm - s0.norm);
    e_norm = dn / std::max(s0.norm, small * std::sqrt(n));
    m.rmse = dn / std::sqrt(n);
  }
  if (finite2(s0.mean, s1.mean)) {
    const double dm = std::fabs(s1.mean - s0.mean);
    const double rms0 = std::isfinite(s0.norm) ? s0.norm / std::sqrt(n) : 0;
    e_mean = dm / std::max(rms0, small);
    m.mean_abs = dm;
  }
  if (finite2(s0.min, s1.min) && finite2(s0.max, s1.max)) {
    const double dx = std::max(std::fabs(s1.min - s0.min), std::fabs(s1.max - s0.max));
    const double amax0 = std::max(std::fabs(s0.min), std::fabs(s0.max));
    e_ext = dx / std::max(amax0, small);
    m.max_abs = dx;
  }
  auto nanmax = [](double a, double b) { return std::isnan(a) ? b : std::isnan(b) ? a : std::max(a, b); };
  m.rel_l2 = nanmax(e_norm, e_mean);
  m.stat_error = nanmax(m.rel_l2, e_ext);
  return m;
}

}  // namespace acc::analyzer
