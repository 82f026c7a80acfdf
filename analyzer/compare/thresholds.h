// Pass / warn / fail per tensor pair: dtype-aware default thresholds
// (docs/METRICS.md lists them) that the user can override per precision.
#pragma once

#include <cstdint>
#include <array>
#include <string>
#include <vector>

#include "analyzer/compare/result.h"

namespace acc::analyzer {

// The precision a pair is judged at: the less precise of its two dtypes.
enum class Precision : uint8_t { Exact = 0, BFloat16, Float16, Float32, Float64 };
constexpr size_t kPrecisions = 5;
const char* precisionName(Precision p);  // int, bf16, fp16, fp32, fp64
Precision pairPrecision(format::Dtype d0, format::Dtype d1);

struct Limits {
  double rel_l2_warn = 0, rel_l2_fail = 0;  // fail when rel_l2 > rel_l2_fail
  double cosine_warn = 1, cosine_fail = 1;  // fail when cosine < cosine_fail
  bool within_5e3 = false;                  // which share is checked: within_5e3 or within_1e3
  double within_warn = 0;                   // warn when that share < within_warn
  double max_abs_fail, max_rel_fail, max_ulp_fail;  // off (+inf) unless set by a flag
  double small = 1;  // zero guard: |x| below it is judged by absolute error
  Limits();
};

struct Thresholds {
  std::array<Limits, kPrecisions> limits;
  // A record is an origin when its outputs' error exceeds this factor times
  // its inputs' error (docs/METRICS.md).
  double origin_factor = 10;

  const Limits& of(Precision p) const { return limits[static_cast<size_t>(p)]; }
  Limits& of(Precision p) { return limits[static_cast<size_t>(p)]; }
};

Thresholds defaultThresholds();

// Sets `field` from a flag value: "X" for every precision, or
// "fp32=X,bf16=Y" for some. Returns an error message, empty on success.
std::string applyOverride(Thresholds& t, double Limits::*field, const std::string& value);

// The threshold flags every command judging tensors takes (--fail-rel-l2,
// --warn-cosine, --small, ...), and applying one: an error message naming
// the flag, empty on success.
// The flags that set thresholds: --fail-rel-l2, --warn-cosine, ...
std::vector<std::string> thresholdFlags();
std::string applyThresholdFlag(Thresholds& t, const std::string& flag, const std::string& value);

// Sets pair.verdict and pair.reason from pair.metrics (compared pairs only).
// `cap`: judge at most at this precision (a float32 matmul that the run's
// settings let compute in TF32 is judged as fp16, whose mantissa TF32
// has), named `cap_label` in the reason.
void judge(TensorPair& pair, const Thresholds& t, Precision cap = Precision::Float64, const std::string& cap_label = "");

}  // namespace acc::analyzer
