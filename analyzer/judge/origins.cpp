#include "analyzer/judge/origins.h"

#include "analyzer/common/elements.h"

#include <cstdint>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_set>

namespace acc::analyzer {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

bool hasValues(const TensorPair& p) { return p.has_stats0 && p.has_stats1; }

uint64_t elementsOf(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d < 0 ? 0 : d);
  return n;
}

// Two tensors with the same contents on both sides (checksums, dtypes,
// element count) hold the same values: how uninitialized memory is followed
// from one record to the next.
using ValueKey = std::tuple<uint64_t, uint64_t, uint8_t, uint8_t, uint64_t>;

ValueKey valueKey(const TensorPair& p) {
  uint64_t n = 1;
  for (int64_t d : p.shape0) n *= static_cast<uint64_t>(d < 0 ? 0 : d);
  return {p.stats0.checksum, p.stats1.checksum, static_cast<uint8_t>(p.dtype0), static_cast<uint8_t>(p.dtype1), n};
}

uint64_t pairKey(uint64_t a, uint64_t b) { return a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2)); }

void markUninitialized(TensorPair& p) {
  p.uninitialized = true;
  p.verdict = Verdict::Pass;
  p.reason = "uninitialized memory (not judged)";
  p.metrics.mismatch += std::string(p.metrics.mismatch.empty() ? "" : "; ") + "uninitialized memory";
}

// Ops that divide by (or take the root or log of) an input, and which
// argument: on the tensor's scale they turn the small relative error of small
// elements into a large one (Adam's addcdiv_ by sqrt(v) + eps).
int denominatorPosition(const std::string& op) {
  static const std::pair<const char*, int> kOps[] = {
      {"div", 1},        {"div_", 1},        {"true_divide", 1}, {"true_divide_", 1}, {"divide", 1},
      {"divide_", 1},    {"addcdiv", 2},     {"addcdiv_", 2},    {"reciprocal", 0},   {"reciprocal_", 0},
      {"rsqrt", 0},      {"rsqrt_", 0},      {"sqrt", 0},        {"sqrt_", 0},        {"log", 0},
      {"log_", 0},       {"log2", 0},        {"log10", 0},       {"_foreach_div", 1}, {"_foreach_div_", 1},
      {"_foreach_addcdiv", 2}, {"_foreach_addcdiv_", 2}, {"_foreach_sqrt", 0}, {"_foreach_sqrt_", 0}};
  const std::string base = op.substr(op.rfind(':') == std::string::npos ? 0 : op.rfind(':') + 1);
  for (const auto& [name, position] : kOps) {
    if (base == name) return position;
  }
  return -1;
}

// max|x| / min|x| over the reference's values of the denominator argument
// (infinite when they reach or cross zero); 1 when there is none.
double denominatorSpread(const RecordComparison& forward) {
  const int position = denominatorPosition(forward.op);
  double spread = 1;
  for (const TensorPair& p : forward.tensors) {
    if (position < 0 || p.role != format::Role::Input || p.position != static_cast<uint32_t>(position) ||
        !p.has_stats0) {
      continue;
    }
    const double lo = p.stats0.min > 0 ? p.stats0.min : p.stats0.max < 0 ? -p.stats0.max : 0;
    const double hi = std::max(std::fabs(p.stats0.min), std::fabs(p.stats0.max));
    spread = std::max(spread, lo > 0 ? hi / lo : kInfinity);
  }
  return spread;
}

std::string baseName(const std::string& op) {
  const size_t colon = op.rfind(':');
  return colon == std::string::npos ? op : op.substr(colon + 1);
}

// Level 1, inputs that differ: an op is named only when its outputs'
// statistics differ this many times more than its inputs' (below, it "may
// amplify"; docs/METRICS.md).
constexpr double kStatisticsAmplification = 100;

// compare screens an output for replay once it is this many times further
// apart than anything its record consumes (and beyond the kernel floor).
constexpr double kScreenFactor = 2;

// Every input the record consumes holds the same bits on both sides (and it
// consumes at least one): whatever its outputs' difference, its kernel made it.
bool inputsBitIdentical(const RecordComparison& r) {
  bool any = false;
  for (const TensorPair& p : r.tensors) {
    if (!consumes(r, p)) continue;
    if (!hasValues(p) || !p.metrics.compared || !p.metrics.from_stats || !p.metrics.checksum_equal) return false;
    any = true;
  }
  return any;
}

// Level 1, inputs bit-identical: an output whose statistics differ by more
// than identical_inputs_floor units of roundoff comes from another
// computation, whatever the fixed threshold (a bf16 kernel 3 % off is ~8
// units; two correct kernels round within 1 or 2 of each other).
// Returns whether a tensor now fails.
bool judgeIdenticalInputs(RecordComparison& r, const Thresholds& t) {
  bool fails = false;
  for (TensorPair& p : r.tensors) {
    if (consumes(r, p) || p.verdict == Verdict::Fail || p.uninitialized || !p.metrics.compared ||
        !p.metrics.from_stats || p.metrics.checksum_equal || std::isnan(p.metrics.stat_error)) {
      continue;
    }
    const Precision precision = judgedPrecision(p);
    const double u = t.of(precision).roundoff;
    const double e = kernelError(p, t);
    if (u <= 0 || !(e > t.identicalInputsFloor(precision))) continue;
    char text[160];
    std::snprintf(text, sizeof text, "statistics error %.3g (%.3g units of roundoff) from bit-identical inputs",
                  e, e / u);
    p.verdict = Verdict::Fail;
    p.reason = text;
    fails = true;
  }
  return fails;
}

}  // namespace

// Ops whose derivative jumps where their input crosses a threshold (relu at
// 0, hardtanh at its limits, max pooling's chosen element): their backward
// masks the incoming gradient by the forward's input, and an input that
// differs at all between the runs may flip an element, whose whole gradient
// then differs (googlenet: 120x its inputs' statistics, 1 vs 2 threads).
bool masksItsGradient(const std::string& op) {
  // Never destroyed, as the sets below: the recorder judges records on a
  // thread of its own (ACC_REFERENCE) that may still run while a C++
  // program's exit destroys function-local statics.
  static const std::set<std::string>& kOps = *new std::set<std::string>{
      "relu", "relu_", "relu6", "threshold", "threshold_", "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_",
      "clamp", "clamp_", "clip", "clip_", "clamp_min", "clamp_min_", "clamp_max", "clamp_max_", "hardswish",
      "hardswish_", "hardsigmoid", "hardsigmoid_", "hardshrink", "softshrink", "abs", "abs_", "max_pool1d",
      "max_pool2d", "max_pool3d", "max_pool2d_with_indices", "adaptive_max_pool2d", "maximum", "minimum", "max",
      "min", "amax", "amin", "where", "masked_fill", "masked_fill_", "prelu", "rrelu", "celu", "selu", "elu",
      "elu_"};
  return kOps.count(baseName(op)) != 0;
}

bool isViewOp(const std::string& op, format::Pass pass) {
  // Views and aliases compute nothing (a view's backward reshapes the
  // gradient back); a device's stride bug shows in the op that reads them.
  static const std::set<std::string>& kReshapes = *new std::set<std::string>{
      "view", "_unsafe_view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "t", "t_",
      "transpose", "transpose_", "permute", "squeeze", "squeeze_", "unsqueeze", "unsqueeze_", "movedim",
      "moveaxis", "swapaxes", "swapdims", "alias", "detach", "detach_", "view_as_real", "view_as_complex",
      "_reshape_alias", "numpy_T", "mT", "mH", "adjoint", "lift_fresh"};
  static const std::set<std::string>& kViews = *new std::set<std::string>{
      "select", "slice", "narrow", "as_strided", "expand", "expand_as", "unfold", "diagonal", "split",
      "split_with_sizes", "unsafe_split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit",
      "real", "imag", "indices", "values", "crow_indices", "col_indices", "_indices", "_values"};
  const std::string base = baseName(op);
  if (kReshapes.count(base)) return true;
  return pass == format::Pass::Forward && kViews.count(base);
}

bool consumes(const RecordComparison& r, const TensorPair& p) {
  return r.pass == format::Pass::Forward ? p.role == format::Role::Input : p.role == format::Role::GradIn;
}

bool failsOnStatistics(const RecordComparison& r) {
  for (const TensorPair& p : r.tensors) {
    if (!consumes(r, p) && p.verdict == Verdict::Fail && p.metrics.compared && p.metrics.from_stats) return true;
  }
  return false;
}

double kernelError(const TensorPair& p, const Thresholds& t) {
  const double e = carriedError(p);
  if (!std::isfinite(e) || e == 0 || !p.has_stats0 || !(p.stats0.norm > 0)) return e;
  // Every guarded error divides by max(scale, small x sqrt(N)) (rel_l2,
  // e_norm, e_ext; e_mean alike): undo the guard down to the smallest normal.
  const Precision precision = judgedPrecision(p);
  const double n = static_cast<double>(elementsOf(p.shape0)) * realsPerElement(p.dtype0);
  const double guard = std::sqrt(n);
  const double guarded = std::max(p.stats0.norm, t.of(precision).small * guard);
  return e * guarded / std::max(p.stats0.norm, smallestNormal(precision) * guard);
}

double carriedError(const TensorPair& p) {
  if (p.uninitialized) return 0;
  const TensorMetrics& m = p.metrics;
  if (!m.compared) return p.verdict == Verdict::Fail ? kInfinity : 0;
  if (m.nan_mismatch || m.inf_mismatch) return kInfinity;
  double e = m.from_stats ? (m.checksum_equal ? 0 : m.stat_error) : m.rel_l2;
  return std::isnan(e) ? 0 : e;
}

// Ops returning uninitialized memory are recorded without values; memory
// that later shows up as an input differing between the runs, with the same
// dtype and shape, no recorded producer and no value yet written, is that
// memory (e.g. a parameter read by an in-place initializer, or its detach()).
// Its copies (same values on both sides) are followed through later records.
void OriginJudge::findUninitialized(RecordComparison& r) {
  for (TensorPair& p : r.tensors) {
    if (!consumes(r, p) || !hasValues(p)) continue;
    ValueKey key = valueKey(p);
    if (uninitialized_.count(key)) {
      markUninitialized(p);
    } else if (p.verdict != Verdict::Pass && p.dtype0 == p.dtype1 &&
               empty_shapes_.count({static_cast<uint8_t>(p.dtype0), p.shape0}) &&
               !produced0_.contains(p.stats0.checksum)) {
      markUninitialized(p);
      uninitialized_.insert(key);
    }
  }
  for (TensorPair& p : r.tensors) {
    if (consumes(r, p)) continue;
    if (!hasValues(p)) {
      if (!p.metrics.compared && p.role == format::Role::Output && p.verdict == Verdict::Pass && !p.has_stats0 &&
          !p.has_stats1) {
        empty_shapes_.insert({static_cast<uint8_t>(p.dtype0), p.shape0});
      }
      continue;
    }
    if (uninitialized_.count(valueKey(p))) markUninitialized(p);
    produced0_.insert(p.stats0.checksum);
  }
}

namespace {

// Level 1 cannot tell: the candidate is no origin, and says why.
void markMayAmplify(RecordComparison& r, const std::string& why) {
  r.origin = false;
  r.replay.state = ReplayState::MayAmplify;
  r.replay.reason = why;
}

}  // namespace

void OriginJudge::judge(RecordComparison& r) {
  findUninitialized(r);
  if (r.step != step_) {
    forward_.clear();  // a backward record's forward op ran in its step
    step_ = r.step;
  }
  r.verdict = Verdict::Pass;
  r.input_error = r.output_error = 0;
  r.inherits_recorded = true;
  bool output_fails = false;
  for (const TensorPair& p : r.tensors) {
    if (consumes(r, p) && carriedError(p) > 0 &&
        !(hasValues(p) && produced_.contains(pairKey(p.stats0.checksum, p.stats1.checksum)))) {
      r.inherits_recorded = false;
    }
  }
  for (const TensorPair& p : r.tensors) {
    if (!consumes(r, p) && hasValues(p)) produced_.insert(pairKey(p.stats0.checksum, p.stats1.checksum));
  }
  for (const TensorPair& p : r.tensors) {
    if (!p.uninitialized && p.verdict > r.verdict) r.verdict = p.verdict;
    const double e = carriedError(p);
    if (consumes(r, p)) {
      r.input_error = std::max(r.input_error, e);
    } else {
      r.output_error = std::max(r.output_error, e);
      output_fails = output_fails || p.verdict == Verdict::Fail;
    }
  }
  // What a backward record needs of its forward op: it also reads what the
  // forward saved (its inputs and outputs), so error they carry is inherited.
  const Forward* fwd = nullptr;
  Forward self{r.op, r.input_error, r.output_error, 1};
  if (r.pass == format::Pass::Forward) {
    if (denominatorPosition(r.op) >= 0) self.denominator_spread = denominatorSpread(r);
    forward_[r.name] = self;
    fwd = &forward_[r.name];
  } else {
    std::string name = r.name;
    const size_t at = name.rfind(".bwd");
    if (at != std::string::npos) name = name.substr(0, at) + ".fwd";
    auto it = forward_.find(name);
    if (it != forward_.end()) {
      fwd = &it->second;
      r.input_error = std::max({r.input_error, fwd->input_error, fwd->output_error});
    }
  }
  // Backward records: the forward's saved tensors must agree too.
  if (r.input_error == 0 && inputsBitIdentical(r) && judgeIdenticalInputs(r, thresholds_)) {
    output_fails = true;
    r.verdict = Verdict::Fail;
  }
  r.origin = output_fails && r.output_error > thresholds_.origin_factor * r.input_error;
  r.screened = false;
  if (isViewOp(r.op, r.pass)) r.origin = false;  // it computes nothing: error it shows came in with its input
  if (r.origin && isCollectiveRecord(r)) {
    // What its inputs lack came in with another rank's contribution.
    r.origin = false;
    r.from_other_ranks = true;
    r.inherits_recorded = false;
  }
  r.replay = ReplayCheck();
  // Level 1 cannot replay, and a division (Adam's update by sqrt(v) + eps)
  // turns the small error of small elements into a large one on the
  // tensor's scale: with inputs that differ at all, its failing output may
  // be amplification as well as a wrong kernel (docs/METRICS.md, "Origins").
  // Inputs that agree bit for bit leave no error to amplify.
  if (r.origin && r.input_error > 0 && fwd && failsOnStatistics(r) && denominatorPosition(fwd->op) >= 0) {
    const double spread = fwd->denominator_spread;
    char text[200];
    std::snprintf(text, sizeof text,
                  "divides by values spanning %s decades, with inputs that already differ: statistics cannot "
                  "tell amplification from a wrong kernel",
                  std::isfinite(spread) ? std::to_string(std::log10(spread)).substr(0, 4).c_str() : "more than 300");
    markMayAmplify(r, text);
  }
  if (r.origin && failsOnStatistics(r) && r.pass == format::Pass::Backward) sumsMayAmplify(r);
  if (r.origin && failsOnStatistics(r) && r.pass == format::Pass::Backward && r.input_error > 0 &&
      masksItsGradient(r.op)) {
    markMayAmplify(r, "its gradient is masked by where its forward input crosses a threshold, and that input "
                      "already differs: a flipped element moves the whole gradient; statistics cannot tell that "
                      "from a wrong kernel");
  }
  if (r.origin && failsOnStatistics(r) && r.input_error > 0 &&
      !(r.output_error > kStatisticsAmplification * r.input_error)) {
    // Statistics are lower bounds of the error: an input whose elements
    // differ by 1e-3 may show 1e-5 in its norm and mean. A mask that flips
    // where the forward's input crossed zero (relu's backward), a square
    // (Adam's second moment) or a sum then shows far more in its output's
    // statistics than its inputs' showed, with no kernel at fault (a thread
    // count alone does it, by up to ~60x in torchvision models).
    char text[240];
    std::snprintf(text, sizeof text,
                  "its outputs' statistics differ %.3gx more than its inputs' (up to %.0fx is what masks, squares "
                  "and sums of inputs that already differ show): statistics cannot tell that from a wrong kernel",
                  r.output_error / r.input_error, kStatisticsAmplification);
    markMayAmplify(r, text);
  }
  screen(r);
}

// Level 1, backward records: when only outputs that sum over many of the
// values the record consumes fail (a weight or bias gradient summed over
// batch and space, a convolution's input gradient), the sum's cancellation
// may amplify its inputs' error, or its own rounding order, many times (a
// thread count alone moves a BatchNorm's weight gradient by 1e-3 with
// bit-identical inputs): statistics cannot tell that from a wrong kernel. An
// output with as many elements as an input that fails by the ratio rule
// still names the op.
void OriginJudge::sumsMayAmplify(RecordComparison& r) const {
  uint64_t largest_input = 0;
  for (const TensorPair& p : r.tensors) {
    if (consumes(r, p) && hasValues(p)) largest_input = std::max(largest_input, elementsOf(p.shape0));
  }
  double other_error = 0, worst_sum = 0;
  bool other_fails = false;
  uint64_t terms = 0;
  for (const TensorPair& p : r.tensors) {
    if (consumes(r, p)) continue;
    const uint64_t n = elementsOf(p.shape0);
    if (n > 0 && n < largest_input) {
      if (carriedError(p) > worst_sum) {
        worst_sum = carriedError(p);
        terms = largest_input / n;
      }
      continue;
    }
    other_error = std::max(other_error, carriedError(p));
    other_fails = other_fails || p.verdict == Verdict::Fail;
  }
  if (terms == 0 || (other_fails && other_error > thresholds_.origin_factor * r.input_error)) return;
  char text[240];
  std::snprintf(text, sizeof text,
                "an output sums about %llu values of a larger input%s: cancellation and summation order may "
                "amplify error; statistics cannot tell that from a wrong kernel",
                static_cast<unsigned long long>(terms),
                r.input_error > 0 ? ", whose error it carries" : ", summed in an order the kernel chooses");
  markMayAmplify(r, text);
}

// Level 2: an output further apart than the kernel floor and than
// kScreenFactor x its inputs' error, though below the fail threshold, may
// come from a kernel a few units of roundoff wrong: replay decides.
void OriginJudge::screen(RecordComparison& r) const {
  if (r.origin || r.replay.state != ReplayState::NotTried || isViewOp(r.op, r.pass) || isCollectiveRecord(r) ||
      isGradientRecord(r)) {
    return;
  }
  for (const TensorPair& p : r.tensors) {
    if (consumes(r, p) || p.uninitialized || !p.metrics.compared || p.metrics.from_stats) continue;
    // On the tensor's own scale (tiny gradients too); its inputs' error as
    // carried, so a tiny output beside large inputs is screened: replay decides.
    const double e = kernelError(p, thresholds_);
    if (e > thresholds_.kernelFloor(judgedPrecision(p)) && e > kScreenFactor * r.input_error) {
      r.screened = true;
      return;
    }
  }
}

void judgeRecords(std::vector<RecordComparison>& records, const Thresholds& thresholds) {
  OriginJudge judge(thresholds);
  for (RecordComparison& r : records) judge.judge(r);
}

std::string userLocation(const std::vector<std::string>& stack) {
  auto internal = [](const std::string& f) {
    return f.find("/torch/") != std::string::npos || f.find("/lib/python3") != std::string::npos ||
           f.find("<frozen ") != std::string::npos;
  };
  for (const std::string& f : stack) {
    if (f.find(".py:") != std::string::npos && !internal(f)) return f;
  }
  return stack.empty() ? "" : stack.front();
}

}  // namespace acc::analyzer
