#include "analyzer/judge/metrics.h"

#include <cstdint>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "analyzer/judge/finite_sums.h"

namespace acc::analyzer {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

void MetricAccumulator::add(const double* b, const double* t, size_t count, const MetricParams& p) {
  if (size_t done = addFiniteAvx2(b, t, count, p, s_)) {
    total_ += done;
    if (done < count) addWithSpecials(b + done, t + done, count - done, p);
    return;
  }
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
  const size_t done = addFinitePortable(b, t, count, p, s_);
  total_ += done;
  if (done < count) addWithSpecials(b + done, t + done, count - done, p);
}

void MetricAccumulator::addWithSpecials(const double* b, const double* t, size_t count, const MetricParams& p) {
  const bool integer = p.ulp_format.digits == 0;
  total_ += count;
  for (size_t i = 0; i < count; ++i) {
    const double x = b[i], y = t[i];
    // Sign classes: > 0, < 0, 0, NaN.
    const auto sign = [](double v) { return std::isnan(v) ? 2 : (v > 0) - (v < 0); };
    s_.sign_differs += sign(x) != sign(y);
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
    ++s_.finite;
    const double d = y - x, a = std::fabs(d);
    s_.sum_abs += a;
    s_.sum_sq += d * d;
    s_.sum_b2 += x * x;
    s_.sum_t2 += y * y;
    s_.dot += x * y;
    s_.max_abs = std::max(s_.max_abs, a);
    const double rel = a / std::max(std::fabs(x), p.small);
    s_.max_rel = std::max(s_.max_rel, rel);
    s_.within1 += rel <= 1e-3;
    s_.within5 += rel <= 5e-3;
    const double ulps = integer ? a : a * inverseUlp(x, p.ulp_format);
    s_.max_ulp = std::max(s_.max_ulp, ulps);
  }
}

void MetricAccumulator::merge(const MetricAccumulator& o) {
  total_ += o.total_;
  s_.finite += o.s_.finite;
  agree_ += o.agree_;
  nan_mismatch_ += o.nan_mismatch_;
  inf_mismatch_ += o.inf_mismatch_;
  s_.within1 += o.s_.within1;
  s_.within5 += o.s_.within5;
  s_.sign_differs += o.s_.sign_differs;
  s_.sum_abs += o.s_.sum_abs;
  s_.sum_sq += o.s_.sum_sq;
  s_.sum_b2 += o.s_.sum_b2;
  s_.sum_t2 += o.s_.sum_t2;
  s_.dot += o.s_.dot;
  s_.max_abs = std::max(s_.max_abs, o.s_.max_abs);
  s_.max_rel = std::max(s_.max_rel, o.s_.max_rel);
  s_.max_ulp = std::max(s_.max_ulp, o.s_.max_ulp);
}

TensorMetrics MetricAccumulator::finish(const MetricParams& p) const {
  TensorMetrics m;
  m.compared = true;
  m.nan_mismatch = nan_mismatch_;
  m.inf_mismatch = inf_mismatch_;
  m.max_abs = s_.max_abs;
  m.max_rel = s_.max_rel;
  m.max_ulp = s_.max_ulp;
  if (s_.finite > 0) {
    const double n = static_cast<double>(s_.finite);
    m.mean_abs = s_.sum_abs / n;
    m.rmse = std::sqrt(s_.sum_sq / n);
    const double norm_d = std::sqrt(s_.sum_sq), norm_b = std::sqrt(s_.sum_b2), norm_t = std::sqrt(s_.sum_t2);
    m.rel_l2 = norm_d == 0 ? 0 : norm_d / std::max(norm_b, p.small * std::sqrt(n));
    if (norm_b == 0 && norm_t == 0) m.cosine = 1;
    else if (norm_b == 0 || norm_t == 0) m.cosine = kNaN;
    else m.cosine = std::clamp(s_.dot / (norm_b * norm_t), -1.0, 1.0);
  }
  if (total_ > 0) {
    const double n = static_cast<double>(total_);
    m.within_1e3 = static_cast<double>(s_.within1 + agree_) / n;
    m.within_5e3 = static_cast<double>(s_.within5 + agree_) / n;
    m.sign_agree = 1 - static_cast<double>(s_.sign_differs) / n;
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
  m.cosine = m.max_rel = m.within_1e3 = m.within_5e3 = m.max_ulp = m.sign_agree = kNaN;
  if (same_bits_layout && s0.checksum == s1.checksum && s0.nan_count == s1.nan_count &&
      s0.inf_count == s1.inf_count) {
    // Bit-identical contents: every metric takes its perfect value.
    m.checksum_equal = true;
    m.cosine = 1;
    m.max_rel = 0;
    m.within_1e3 = m.within_5e3 = m.sign_agree = 1;
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
    // On the tensor's scale, as rel_l2 is (|d_i| <= ||d||): judged against
    // the largest element instead, a tensor of pure rounding noise (a
    // gradient that is 0 in exact arithmetic) would fail on its noise.
    const double scale0 = std::isfinite(s0.norm) ? s0.norm : std::max(std::fabs(s0.min), std::fabs(s0.max));
    e_ext = dx / std::max(scale0, small * std::sqrt(n));
    m.max_abs = dx;
  }
  auto nanmax = [](double a, double b) { return std::isnan(a) ? b : std::isnan(b) ? a : std::max(a, b); };
  m.rel_l2 = nanmax(nanmax(e_norm, e_mean), e_ext);
  m.stat_error = m.rel_l2;
  return m;
}

}  // namespace acc::analyzer
