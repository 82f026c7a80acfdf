#include "analyzer/compare/tensor_pairs.h"
#include "analyzer/common/text.h"

#include <cstdint>
#include <algorithm>
#include <map>
#include <tuple>

#include "analyzer/common/elements.h"
#include "analyzer/judge/metrics.h"

namespace acc::analyzer {
namespace {

using Key = std::tuple<uint8_t, uint32_t, uint32_t>;

Key keyOf(const format::Tensor& t) { return {static_cast<uint8_t>(t.role), t.position, t.item}; }

void notCompared(PlannedPair& p, Verdict v, std::string why) {
  p.kind = PairKind::None;
  p.pair.metrics.compared = false;
  p.pair.metrics.mismatch = why;
  p.pair.verdict = v;
  p.pair.reason = std::move(why);
}

void plan(PlannedPair& p, const Thresholds& thresholds, bool backward) {
  const format::Tensor* a = p.t0;
  const format::Tensor* b = p.t1;
  TensorPair& pair = p.pair;
  const format::Tensor& any = a ? *a : *b;
  pair.role = any.role;
  pair.position = any.position;
  pair.item = any.item;
  if (a) {
    pair.dtype0 = a->dtype;
    pair.shape0 = a->shape;
    pair.has_stats0 = a->has_stats;
    pair.stats0 = a->stats;
  }
  if (b) {
    pair.dtype1 = b->dtype;
    pair.shape1 = b->shape;
    pair.has_stats1 = b->has_stats;
    pair.stats1 = b->stats;
  }
  // A tensor recorded on one side only: inputs/outputs recorded differently
  // (ACC_INPUTS, ACC_OUTPUTS) or an op returning more on one device.
  if (!a) return notCompared(p, Verdict::Warn, "missing in DIR0");
  if (!b) return notCompared(p, Verdict::Warn, "missing in DIR1");
  if (a->uninitialized || b->uninitialized) {
    // The recorder saw memory from torch.empty & co. that nothing had written.
    pair.uninitialized = true;
    return notCompared(p, Verdict::Pass, "uninitialized memory (not recorded)");
  }
  const std::string dtypes = std::string(format::dtypeName(a->dtype)) + " vs " + format::dtypeName(b->dtype);
  if (realsPerElement(a->dtype) == 0 || realsPerElement(b->dtype) == 0) {
    return notCompared(p, a->dtype == b->dtype ? Verdict::Pass : Verdict::Warn,
                       a->dtype == b->dtype ? "no element type to compare" : "dtype " + dtypes);
  }
  if (isComplex(a->dtype) != isComplex(b->dtype)) return notCompared(p, Verdict::Fail, "dtype " + dtypes);
  const uint64_t n0 = a->numel(), n1 = b->numel();
  if (n0 != n1) {
    const std::string shapes = "shape " + shapeText(a->shape) + " vs " + shapeText(b->shape);
    // A forward op computed the same thing on both sides; its backward
    // records differ in shape when autograd took another path (NHWC, fused
    // or unfused, another backend's composite): nothing to compare, no error.
    if (backward) {
      return notCompared(p, Verdict::Warn,
                         "not comparable: " + shapes + " (the runs' autograd took different paths for this op)");
    }
    return notCompared(p, Verdict::Fail, shapes);
  }
  std::string note;
  if (a->shape != b->shape) note = "shape " + shapeText(a->shape) + " vs " + shapeText(b->shape);
  if (a->dtype != b->dtype) note += (note.empty() ? "" : "; ") + std::string("dtype ") + dtypes;
  p.reals = n0 * realsPerElement(a->dtype);
  p.params.small = thresholds.of(pairPrecision(a->dtype, b->dtype)).small;
  p.params.ulp_format = floatFormat(b->dtype);
  const bool data0 = a->has_data && a->data.size() == n0 * format::dtypeSize(a->dtype);
  const bool data1 = b->has_data && b->data.size() == n1 * format::dtypeSize(b->dtype);
  if (data0 && data1) {
    p.kind = PairKind::Elements;
  } else if (a->has_stats && b->has_stats) {
    p.kind = PairKind::Stats;
  } else {
    // Level 0, or the outputs of ops returning uninitialized memory.
    const char* side = !(a->has_stats || a->has_data) ? (!(b->has_stats || b->has_data) ? "" : "DIR0") : "DIR1";
    std::string why = *side ? std::string("no values recorded in ") + side : "no values recorded";
    return notCompared(p, Verdict::Pass, note.empty() ? why : note + "; " + why);
  }
  pair.metrics.mismatch = note;
}

}  // namespace

std::vector<PlannedPair> planPairs(const format::OpRecord& r0, const format::OpRecord& r1,
                                   const Thresholds& thresholds) {
  std::map<Key, std::pair<const format::Tensor*, const format::Tensor*>> by_key;
  for (const format::Tensor& t : r0.tensors) by_key[keyOf(t)].first = &t;
  for (const format::Tensor& t : r1.tensors) by_key[keyOf(t)].second = &t;
  std::vector<PlannedPair> out;
  out.reserve(by_key.size());
  for (const auto& [key, tensors] : by_key) {
    PlannedPair p;
    p.t0 = tensors.first;
    p.t1 = tensors.second;
    plan(p, thresholds, r0.pass == format::Pass::Backward || r1.pass == format::Pass::Backward);
    out.push_back(std::move(p));
  }
  return out;
}

void compareStats(PlannedPair& p, const Thresholds& thresholds) {
  const bool same_bits = p.t0->dtype == p.t1->dtype && p.t0->shape == p.t1->shape;
  std::string note = p.pair.metrics.mismatch;
  p.pair.metrics = statsMetrics(p.t0->stats, p.t1->stats, same_bits, p.reals, p.params.small);
  p.pair.metrics.mismatch = note;
  judge(p.pair, thresholds);
}

std::vector<TensorPair> compareRecordsNow(const format::OpRecord& r0, const format::OpRecord& r1,
                                          const Thresholds& thresholds) {
  std::vector<TensorPair> out;
  for (PlannedPair& p : planPairs(r0, r1, thresholds)) {
    if (p.kind == PairKind::Elements) {
      std::string note = p.pair.metrics.mismatch;
      p.pair.metrics = elementMetrics(p.t0->data.data(), p.t0->dtype, p.t1->data.data(), p.t1->dtype, p.reals, p.params);
      p.pair.metrics.mismatch = note;
      judge(p.pair, thresholds);
    } else if (p.kind == PairKind::Stats) {
      compareStats(p, thresholds);
    }
    out.push_back(std::move(p.pair));
  }
  return out;
}

}  // namespace acc::analyzer
