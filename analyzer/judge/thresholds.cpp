#include "analyzer/judge/thresholds.h"

#include <cstdint>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "analyzer/common/elements.h"
#include "analyzer/common/text.h"

namespace acc::analyzer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

int rankOf(format::Dtype d) {
  switch (d) {
    case format::Dtype::BFloat16: return 1;
    case format::Dtype::Float16: return 2;
    case format::Dtype::Float32:
    case format::Dtype::Complex64: return 3;
    case format::Dtype::Float64:
    case format::Dtype::Complex128: return 4;
    default: return 0;
  }
}

bool parsePrecision(const std::string& s, Precision& p) {
  static const std::pair<const char*, Precision> names[] = {
      {"int", Precision::Exact},     {"exact", Precision::Exact},   {"bf16", Precision::BFloat16},
      {"bfloat16", Precision::BFloat16}, {"fp16", Precision::Float16}, {"float16", Precision::Float16},
      {"half", Precision::Float16},  {"fp32", Precision::Float32},  {"float32", Precision::Float32},
      {"float", Precision::Float32}, {"fp64", Precision::Float64},  {"float64", Precision::Float64},
      {"double", Precision::Float64}};
  for (const auto& [name, value] : names) {
    if (s == name) {
      p = value;
      return true;
    }
  }
  return false;
}

}  // namespace

Limits::Limits() : max_abs_fail(kInf), max_rel_fail(kInf), max_ulp_fail(kInf) {}

const char* precisionName(Precision p) {
  static const char* names[kPrecisions] = {"int", "bf16", "fp16", "fp32", "fp64"};
  return names[static_cast<size_t>(p)];
}

Precision pairPrecision(format::Dtype d0, format::Dtype d1) {
  int r0 = rankOf(d0), r1 = rankOf(d1);
  if (r0 == 0 && r1 == 0) return Precision::Exact;
  if (r0 == 0) return static_cast<Precision>(r1);
  if (r1 == 0) return static_cast<Precision>(r0);
  return static_cast<Precision>(std::min(r0, r1));
}

Precision judgedPrecision(const TensorPair& p) {
  const Precision own = pairPrecision(p.dtype0, p.dtype1);
  const Precision allowed = static_cast<Precision>(p.allowed_precision);
  return p.allowed_precision != 0 && own != Precision::Exact && allowed < own ? allowed : own;
}

double smallestNormal(Precision p) {
  switch (p) {
    case Precision::BFloat16:
    case Precision::Float32: return std::ldexp(1.0, -126);
    case Precision::Float16: return std::ldexp(1.0, -14);
    case Precision::Float64: return std::ldexp(1.0, -1022);
    default: return 1;
  }
}

Thresholds kernelThresholds(const Thresholds& t) {
  Thresholds k = t;
  for (size_t i = 1; i < kPrecisions; ++i) k.limits[i].small = smallestNormal(static_cast<Precision>(i));
  return k;
}

Thresholds defaultThresholds() {
  Thresholds t;
  Limits& exact = t.of(Precision::Exact);  // integers and bool: any difference fails
  exact.rel_l2_warn = 0;
  exact.rel_l2_fail = 0;
  exact.cosine_warn = exact.cosine_fail = -kInf;
  exact.within_warn = 0;
  exact.small = 1;

  Limits& bf16 = t.of(Precision::BFloat16);
  bf16.rel_l2_warn = 1e-2;
  bf16.rel_l2_fail = 4e-2;
  bf16.cosine_warn = 0.999;
  bf16.cosine_fail = 0.99;
  bf16.within_5e3 = true;
  bf16.within_warn = 0.95;
  bf16.small = std::ldexp(1.0, -8);
  bf16.roundoff = std::ldexp(1.0, -8);
  bf16.kernel_floor = 5;
  bf16.identical_inputs_floor = 6;

  Limits& fp16 = t.of(Precision::Float16);
  fp16.rel_l2_warn = 2e-3;
  fp16.rel_l2_fail = 1e-2;
  fp16.cosine_warn = 0.9999;
  fp16.cosine_fail = 0.999;
  fp16.within_5e3 = true;
  fp16.within_warn = 0.99;
  fp16.small = std::ldexp(1.0, -11);
  fp16.roundoff = std::ldexp(1.0, -11);
  fp16.kernel_floor = 5;
  fp16.identical_inputs_floor = 6;

  Limits& fp32 = t.of(Precision::Float32);
  fp32.rel_l2_warn = 1e-5;
  fp32.rel_l2_fail = 1e-4;
  fp32.cosine_warn = 0.99999;
  fp32.cosine_fail = 0.9999;
  fp32.within_warn = 0.999;
  fp32.small = std::ldexp(1.0, -14);
  fp32.roundoff = std::ldexp(1.0, -24);
  fp32.kernel_floor = 32;
  fp32.identical_inputs_floor = 32;

  Limits& fp64 = t.of(Precision::Float64);
  fp64.rel_l2_warn = 1e-10;
  fp64.rel_l2_fail = 1e-8;
  fp64.cosine_warn = 0.99999999;
  fp64.cosine_fail = 0.999999;
  fp64.within_warn = 0.9999;
  fp64.small = std::ldexp(1.0, -30);
  fp64.roundoff = std::ldexp(1.0, -53);
  fp64.kernel_floor = 32;
  fp64.identical_inputs_floor = 32;
  return t;
}

std::string applyOverride(Thresholds& t, double Limits::*field, const std::string& value) {
  double v;
  if (parseNumber(value, v)) {
    for (Limits& l : t.limits) l.*field = v;
    return "";
  }
  std::stringstream items(value);
  std::string item;
  bool any = false;
  while (std::getline(items, item, ',')) {
    size_t eq = item.find('=');
    Precision p;
    if (eq == std::string::npos || !parsePrecision(item.substr(0, eq), p) || !parseNumber(item.substr(eq + 1), v)) {
      return "'" + value + "' is not a number or a list like fp32=1e-4,bf16=0.05 (precisions: int, bf16, fp16, fp32, fp64)";
    }
    t.of(p).*field = v;
    any = true;
  }
  if (!any) return "empty value";
  return "";
}

namespace {

constexpr std::pair<const char*, double Limits::*> kThresholdFlags[] = {
    {"--fail-rel-l2", &Limits::rel_l2_fail},   {"--warn-rel-l2", &Limits::rel_l2_warn},
    {"--fail-cosine", &Limits::cosine_fail},   {"--warn-cosine", &Limits::cosine_warn},
    {"--warn-within", &Limits::within_warn},   {"--fail-max-abs", &Limits::max_abs_fail},
    {"--fail-max-rel", &Limits::max_rel_fail}, {"--fail-ulp", &Limits::max_ulp_fail},
    {"--small", &Limits::small},               {"--kernel-floor", &Limits::kernel_floor},
    {"--identical-inputs-floor", &Limits::identical_inputs_floor}};

double Limits::*thresholdField(const std::string& flag) {
  for (const auto& [name, f] : kThresholdFlags) {
    if (flag == name) return f;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> thresholdFlags() {
  std::vector<std::string> flags;
  for (const auto& [name, f] : kThresholdFlags) flags.emplace_back(name);
  return flags;
}

std::string applyThresholdFlag(Thresholds& t, const std::string& flag, const std::string& value) {
  double Limits::*field = thresholdField(flag);
  if (!field) return "unknown option " + flag;
  std::string err = applyOverride(t, field, value);
  // An explicit fail limit is an error the user accepts: the kernel rules
  // respect it too.
  if (err.empty() && field == &Limits::rel_l2_fail) err = applyOverride(t, &Limits::accepted, value);
  return err.empty() ? "" : flag + ": " + err;
}

void judge(TensorPair& pair, const Thresholds& t, Precision cap, const std::string& cap_label) {
  const TensorMetrics& m = pair.metrics;
  const Precision own = pairPrecision(pair.dtype0, pair.dtype1);
  const bool capped = own != Precision::Exact && cap < own;
  const Precision precision = capped ? cap : own;
  const Limits& l = t.of(precision);
  const std::string where = " (" + (capped ? cap_label : std::string(precisionName(precision))) + ")";
  pair.verdict = Verdict::Pass;
  pair.reason.clear();
  auto fail = [&](const std::string& why) {
    pair.verdict = Verdict::Fail;
    pair.reason = why;
  };
  auto warn = [&](const std::string& why) {
    if (pair.verdict == Verdict::Pass) {
      pair.verdict = Verdict::Warn;
      pair.reason = why;
    }
  };
  if (m.nan_mismatch || m.inf_mismatch) {
    std::string why;
    if (m.nan_mismatch) why = std::to_string(m.nan_mismatch) + " NaN";
    if (m.inf_mismatch) why += std::string(why.empty() ? "" : ", ") + std::to_string(m.inf_mismatch) + " Inf";
    return fail(why + (m.from_stats ? " count(s) differ" : " position(s) differ"));
  }
  if (m.from_stats) {
    if (m.checksum_equal) return;
    if (std::isnan(m.stat_error)) return warn("statistics not comparable (NaN or Inf in both)");
    if (m.stat_error > l.rel_l2_fail) return fail("statistics error " + fmt(m.stat_error) + " > " + fmt(l.rel_l2_fail) + where);
    if (m.stat_error > l.rel_l2_warn) return warn("statistics error " + fmt(m.stat_error) + " > " + fmt(l.rel_l2_warn) + where);
    return;
  }
  // Cosine says little about tensors of (near-)zero norm, which the zero
  // guard of rel_l2 judges by absolute error instead.
  bool cosine_applies = !std::isnan(m.cosine);
  if (cosine_applies && pair.has_stats0 && pair.has_stats1) {
    uint64_t n = 1;
    for (int64_t d : pair.shape0) n *= static_cast<uint64_t>(d < 0 ? 0 : d);
    double floor = l.small * std::sqrt(static_cast<double>(n) * realsPerElement(pair.dtype0));
    if (std::max(pair.stats0.norm, pair.stats1.norm) < floor) cosine_applies = false;
  }
  if (m.rel_l2 > l.rel_l2_fail) return fail("rel_l2 " + fmt(m.rel_l2) + " > " + fmt(l.rel_l2_fail) + where);
  if (cosine_applies && m.cosine < l.cosine_fail) return fail("cosine " + fmt(m.cosine) + " < " + fmt(l.cosine_fail) + where);
  if (m.max_abs > l.max_abs_fail) return fail("max_abs " + fmt(m.max_abs) + " > " + fmt(l.max_abs_fail) + where);
  if (m.max_rel > l.max_rel_fail) return fail("max_rel " + fmt(m.max_rel) + " > " + fmt(l.max_rel_fail) + where);
  if (m.max_ulp > l.max_ulp_fail) return fail("max_ulp " + fmt(m.max_ulp) + " > " + fmt(l.max_ulp_fail) + where);
  if (m.rel_l2 > l.rel_l2_warn) return warn("rel_l2 " + fmt(m.rel_l2) + " > " + fmt(l.rel_l2_warn) + where);
  if (cosine_applies && m.cosine < l.cosine_warn) return warn("cosine " + fmt(m.cosine) + " < " + fmt(l.cosine_warn) + where);
  double share = l.within_5e3 ? m.within_5e3 : m.within_1e3;
  if (share < l.within_warn) {
    return warn(std::string(l.within_5e3 ? "within_5e3 " : "within_1e3 ") + fmt(share) + " < " + fmt(l.within_warn) + where);
  }
  if (pair.shape0 != pair.shape1) warn("shapes differ, same number of elements");
}

}  // namespace acc::analyzer
