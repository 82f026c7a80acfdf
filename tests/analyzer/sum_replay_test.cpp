// A composite op's bias gradient, replayed by the analyzer itself
// (analyzer/judge/sum_replay.h) and judged by judgeByReplay: a correct
// kernel whose sum cancels amplifies, a wrong one is confirmed, and an
// output that is no sum of its input in DIR0 leaves the ratio rule.
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <random>

#include "analyzer/compare/tensor_pairs.h"
#include "analyzer/judge/origins.h"
#include "analyzer/judge/replay_inputs.h"
#include "analyzer/judge/replay_verdict.h"
#include "analyzer/judge/sum_replay.h"

namespace acc::analyzer {
namespace {

using format::Dtype;
using format::Role;

constexpr int kRows = 128, kCols = 16;

uint16_t bf16Bits(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}
float bf16(float f) {
  const uint32_t u = static_cast<uint32_t>(bf16Bits(f)) << 16;
  float out;
  std::memcpy(&out, &u, 4);
  return out;
}

format::Tensor tensor(Role role, uint32_t position, Dtype dtype, std::vector<int64_t> shape,
                      const std::vector<float>& values) {
  format::Tensor t;
  t.role = role;
  t.position = position;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.has_data = true;
  for (float v : values) {
    if (dtype == Dtype::BFloat16) {
      const uint16_t b = bf16Bits(v);
      t.data.append(reinterpret_cast<const char*>(&b), 2);
    } else {
      t.data.append(reinterpret_cast<const char*>(&v), 4);
    }
  }
  t.data_size = t.data.size();
  return t;
}

// One side of "aten::linear.5.bwd.2" (AddmmBackward0): the output gradient
// it consumes and the bias gradient it produces.
struct Side {
  format::OpRecord consumed, produced;
};

Side side(Dtype dtype, const std::vector<float>& grad, const std::vector<float>& bias) {
  Side s;
  s.consumed.name = s.produced.name = "aten::linear.5.bwd.2";
  s.consumed.pass = s.produced.pass = format::Pass::Backward;
  s.consumed.tensors.push_back(tensor(Role::GradIn, 0, dtype, {kRows, kCols}, grad));
  s.produced.tensors.push_back(tensor(Role::GradOut, 0, dtype, {kCols}, bias));
  return s;
}

// Gradients whose columns nearly cancel, as a bias gradient's do.
std::vector<float> gradients(unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.f, 1e-3f);
  std::vector<float> g(kRows * kCols);
  for (float& v : g) v = noise(rng);
  return g;
}

std::vector<float> sums(const std::vector<float>& g, bool round_bf16) {
  std::vector<float> out(kCols, 0.f);
  for (int i = 0; i < kRows; ++i) {
    for (int j = 0; j < kCols; ++j) out[j] += g[i * kCols + j];
  }
  if (round_bf16) {
    for (float& v : out) v = bf16(v);
  }
  return out;
}

ReplayItem item(const Side& s) {
  ReplayItem i;
  i.not_replayable = "one of several autograd nodes of a composite op (AddmmBackward0)";
  i.recorded = s.produced;
  i.sums = replaySums(s.consumed, s.produced);
  return i;
}

// The comparison as compare judged it: an origin by the ratio rule.
RecordComparison candidate(const Side& zero, const Side& one) {
  format::OpRecord r0 = zero.consumed, r1 = one.consumed;
  r0.tensors.push_back(zero.produced.tensors[0]);
  r1.tensors.push_back(one.produced.tensors[0]);
  RecordComparison r;
  r.name = r0.name;
  r.op = "aten::linear";
  r.grad_fn = "AddmmBackward0";
  r.pass = format::Pass::Backward;
  r.tensors = compareRecordsNow(r0, r1, defaultThresholds());
  for (const TensorPair& p : r.tensors) {
    (consumes(r, p) ? r.input_error : r.output_error) = std::max(consumes(r, p) ? r.input_error : r.output_error,
                                                                 carriedError(p));
  }
  r.origin = true;
  return r;
}

struct Judged {
  RecordComparison record;
  ReplayState state;
};

Judged judge(const Side& zero, const Side& one) {
  Judged j{candidate(zero, one), ReplayState::NotTried};
  replay::Outcome not_run;
  not_run.status = replay::Status::NotReplayable;
  judgeByReplay(j.record, item(zero), not_run, item(one), not_run, defaultThresholds());
  j.state = j.record.replay.state;
  return j;
}

// DIR1 in bf16: its gradients rounded, its bias gradient the rounded sum of
// them (what a correct kernel that sums in float stores).
std::vector<float> upstream(const std::vector<float>& g) {
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.f, 4e-3f);
  std::vector<float> g1(g);
  for (float& v : g1) v = bf16(v * (1 + noise(rng)));  // autocast's own difference upstream
  return g1;
}

Side benignBf16(const std::vector<float>& g) {
  const std::vector<float> g1 = upstream(g);
  return side(Dtype::BFloat16, g1, sums(g1, true));
}

TEST(SumReplay, ABiasGradientThatCancelsAmplifiesItsInputsError) {
  const std::vector<float> g = gradients(1);
  const Side zero = side(Dtype::Float32, g, sums(g, false));
  Judged j = judge(zero, benignBf16(g));
  EXPECT_EQ(j.state, ReplayState::Amplifies) << j.record.replay.reason;
  EXPECT_FALSE(j.record.origin);
  EXPECT_NE(j.record.replay.reason.find("sum an input"), std::string::npos);
  EXPECT_LT(j.record.replay.error1, j.record.replay.tolerance);
}

TEST(SumReplay, AWrongSumIsConfirmed) {
  const std::vector<float> g = gradients(2);
  const Side zero = side(Dtype::Float32, g, sums(g, false));
  Side one;
  // 3 % off: ~8 units of bf16's roundoff.
  const std::vector<float> g1 = upstream(g);
  std::vector<float> wrong = sums(g1, false);
  for (float& v : wrong) v = bf16(v * 1.03f);
  one = side(Dtype::BFloat16, g1, wrong);
  Judged j = judge(zero, one);
  EXPECT_EQ(j.state, ReplayState::Confirmed);
  EXPECT_TRUE(j.record.origin);
  EXPECT_GT(j.record.replay.error1, j.record.replay.tolerance);
}

TEST(SumReplay, AnOutputThatIsNoSumInDir0LeavesTheRatioRule) {
  const std::vector<float> g = gradients(3);
  std::vector<float> other(kCols, 0.5f);  // same shape, not the sum
  Judged j = judge(side(Dtype::Float32, g, other), benignBf16(g));
  EXPECT_EQ(j.state, ReplayState::NotReplayable);
  EXPECT_TRUE(j.record.origin);
  // Without values (level 1), nothing is replayed either.
  Side no_values = side(Dtype::Float32, g, sums(g, false));
  no_values.consumed.tensors[0].has_data = false;
  EXPECT_TRUE(replaySums(no_values.consumed, no_values.produced).empty());
}

TEST(SumReplay, SumsOverLeadingDimensionsOnlyAndRoundsAsTheDtype) {
  std::vector<float> g(2 * 3 * 4);
  for (size_t k = 0; k < g.size(); ++k) g[k] = 1.f + 1.f / 1024 * static_cast<float>(k);
  Side s = side(Dtype::BFloat16, {}, {});
  s.consumed.tensors[0] = tensor(Role::GradIn, 0, Dtype::BFloat16, {2, 3, 4}, g);
  s.produced.tensors[0] = tensor(Role::GradOut, 0, Dtype::BFloat16, {1, 4}, std::vector<float>(4, 0.f));
  const SumReplay r = replaySums(s.consumed, s.produced);
  ASSERT_EQ(r.outcome.float64.tensors.size(), 1u);
  std::vector<double> f64(4), rounded(4);
  std::memcpy(f64.data(), r.outcome.float64.tensors[0].data.data(), 32);
  std::memcpy(rounded.data(), r.outcome.same_dtype.tensors[0].data.data(), 32);
  for (int j = 0; j < 4; ++j) {
    double expect = 0;
    for (int i = 0; i < 6; ++i) expect += bf16(g[i * 4 + j]);
    EXPECT_EQ(f64[j], expect);
    float in_order = 0;  // the float32 sum a CPU kernel accumulates
    for (int i = 0; i < 6; ++i) in_order += bf16(g[i * 4 + j]);
    EXPECT_EQ(rounded[j], static_cast<double>(bf16(in_order)));
  }
  // A shape that does not end the input's is no sum of it.
  s.produced.tensors[0] = tensor(Role::GradOut, 0, Dtype::BFloat16, {3}, std::vector<float>(3, 0.f));
  EXPECT_TRUE(replaySums(s.consumed, s.produced).empty());
}

}  // namespace
}  // namespace acc::analyzer
