// Pass / warn / fail per tensor pair: dtype-aware default thresholds
// (docs/METRICS.md lists them) that the user can override per precision.
#pragma once

#include <algorithm>
#include <cstdint>
#include <array>
#include <string>
#include <vector>

#include "analyzer/common/result.h"

namespace acc::analyzer {

// The precision a pair is judged at: the less precise of its two dtypes.
enum class Precision : uint8_t { Exact = 0, BFloat16, Float16, Float32, Float64 };
constexpr size_t kPrecisions = 5;
const char* precisionName(Precision p);  // int, bf16, fp16, fp32, fp64
Precision pairPrecision(format::Dtype d0, format::Dtype d1);
// The precision a pair is judged at: its dtypes', or the coarser one the
// runs' settings allowed its op (TensorPair::allowed_precision).
Precision judgedPrecision(const TensorPair& p);

struct Limits {
  double rel_l2_warn = 0, rel_l2_fail = 0;  // fail when rel_l2 > rel_l2_fail
  double cosine_warn = 1, cosine_fail = 1;  // fail when cosine < cosine_fail
  bool within_5e3 = false;                  // which share is checked: within_5e3 or within_1e3
  double within_warn = 0;                   // warn when that share < within_warn
  double max_abs_fail, max_rel_fail, max_ulp_fail;  // off (+inf) unless set by a flag
  double small = 1;  // zero guard: |x| below it is judged by absolute error
  // Unit roundoff 2^-p of the format (p significand bits: bf16 8, fp16 11,
  // fp32 24, fp64 53; 0 for integers): what the kernel rules count in.
  double roundoff = 0;
  // The kernel rules, in units of roundoff (docs/METRICS.md, "The kernel
  // rule"): replay never calls a kernel wrong within kernel_floor units of
  // float64; at level 1, outputs of bit-identical inputs differing by more
  // than identical_inputs_floor units fail. bf16 and fp16 kernels accumulate
  // in float32, so their error is their output's rounding (5 units leave
  // room for 2 ulps); float32 and float64 kernels accumulate in their own
  // precision, where summation order and algorithm (NHWC batch norm: 8
  // units where the NCHW kernel shows 0.6) add to it: 32 units.
  double kernel_floor = 0, identical_inputs_floor = 0;
  // An error the user accepts (--fail-rel-l2 given): the kernel rules never
  // call one within it wrong. 0 by default: the fixed thresholds are not
  // the kernel rules' business.
  double accepted = 0;
  Limits();
};

struct Thresholds {
  std::array<Limits, kPrecisions> limits;
  // A record is an origin when its outputs' error exceeds this factor times
  // its inputs' error (docs/METRICS.md).
  double origin_factor = 10;
  // Replay (docs/METRICS.md, "The kernel rule"): a kernel is wrong when its
  // output's error against the float64 replay of its own inputs exceeds
  // kernel_factor x what a correct kernel shows on them (the CPU kernel in
  // the same dtypes, the reference run's own) and kernel_floor units of
  // roundoff of the pair's precision. compare replays every output whose
  // error exceeds kernel_floor units and what its inputs explain, even
  // below the fail threshold.
  double kernel_factor = 4;

  // The floors of the kernel rules as errors (Limits' units x roundoff).
  double kernelFloor(Precision p) const { return std::max(of(p).kernel_floor * of(p).roundoff, of(p).accepted); }
  double identicalInputsFloor(Precision p) const {
    return std::max(of(p).identical_inputs_floor * of(p).roundoff, of(p).accepted);
  }

  const Limits& of(Precision p) const { return limits[static_cast<size_t>(p)]; }
  Limits& of(Precision p) { return limits[static_cast<size_t>(p)]; }
};

Thresholds defaultThresholds();

// The kernel rules judge an error on the tensor's own scale: gradients of
// 1e-7 are ordinary in training, and the zero guard `small` (bf16 2^-8,
// msprobe's "small values") would hide a bf16 kernel 3 % off on them. Their
// only guard is the format's smallest normal number (all-zero references).
double smallestNormal(Precision p);
// `t` with each precision's zero guard at its smallest normal number: what
// replay measures kernels with.
Thresholds kernelThresholds(const Thresholds& t);

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
