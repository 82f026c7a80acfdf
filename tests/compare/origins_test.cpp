// Record verdicts and origins (analyzer/compare/origins) on hand-made
// comparisons: error an op inherits is not blamed on it.
#include <cstdint>
#include <gtest/gtest.h>

#include "analyzer/compare/origins.h"

namespace acc::analyzer {
namespace {

TensorPair pair(format::Role role, double rel_l2, Verdict v) {
  TensorPair p;
  p.role = role;
  p.dtype0 = p.dtype1 = format::Dtype::Float32;
  p.shape0 = p.shape1 = {4};
  p.has_stats0 = p.has_stats1 = true;
  p.metrics.compared = true;
  p.metrics.rel_l2 = rel_l2;
  p.verdict = v;
  return p;
}

RecordComparison record(const std::string& name, format::Pass pass, std::vector<TensorPair> tensors, uint64_t index) {
  RecordComparison r;
  r.name = name;
  r.pass = pass;
  r.index0 = r.index1 = index;
  r.tensors = std::move(tensors);
  return r;
}

using format::Pass;
using format::Role;

TEST(CompareOrigins, TheOpThatAddsErrorIsTheOrigin) {
  std::vector<RecordComparison> rs;
  rs.push_back(record("aten::linear.0.fwd", Pass::Forward,
                      {pair(Role::Input, 0, Verdict::Pass), pair(Role::Output, 1e-7, Verdict::Pass)}, 0));
  rs.push_back(record("aten::gelu.1.fwd", Pass::Forward,
                      {pair(Role::Input, 1e-7, Verdict::Pass), pair(Role::Output, 1e-3, Verdict::Fail)}, 1));
  rs.push_back(record("aten::linear.2.fwd", Pass::Forward,
                      {pair(Role::Input, 1e-3, Verdict::Fail), pair(Role::Output, 3e-3, Verdict::Fail)}, 2));
  judgeRecords(rs, defaultThresholds());
  EXPECT_FALSE(rs[0].origin);
  EXPECT_TRUE(rs[1].origin);
  EXPECT_FALSE(rs[2].origin);  // inherits (3x amplification < factor 10)
  EXPECT_EQ(rs[1].verdict, Verdict::Fail);
  EXPECT_EQ(rs[1].input_error, 1e-7);
  EXPECT_EQ(rs[1].output_error, 1e-3);
  // A much larger error added on top of an inherited one is an origin too.
  rs[2].tensors[1].metrics.rel_l2 = 0.5;
  judgeRecords(rs, defaultThresholds());
  EXPECT_TRUE(rs[2].origin);
}

TEST(CompareOrigins, BackwardInheritsFromItsForwardsSavedTensors) {
  std::vector<RecordComparison> rs;
  rs.push_back(record("aten::mse_loss.3.fwd", Pass::Forward,
                      {pair(Role::Input, 1e-3, Verdict::Fail), pair(Role::Output, 1e-5, Verdict::Pass)}, 0));
  // grad_in is exact, but the forward's input (saved for backward) was off.
  rs.push_back(record("aten::mse_loss.3.bwd", Pass::Backward,
                      {pair(Role::GradIn, 0, Verdict::Pass), pair(Role::GradOut, 2e-3, Verdict::Fail)}, 1));
  // A backward node whose forward was exact, fed exact gradients: origin.
  rs.push_back(record("aten::gelu.1.fwd", Pass::Forward,
                      {pair(Role::Input, 0, Verdict::Pass), pair(Role::Output, 0, Verdict::Pass)}, 2));
  rs.push_back(record("aten::gelu.1.bwd", Pass::Backward,
                      {pair(Role::GradIn, 0, Verdict::Pass), pair(Role::GradOut, 1e-3, Verdict::Fail)}, 3));
  judgeRecords(rs, defaultThresholds());
  EXPECT_FALSE(rs[1].origin);
  EXPECT_EQ(rs[1].input_error, 1e-3);
  EXPECT_TRUE(rs[3].origin);
}

TEST(CompareOrigins, UninitializedMemoryIsFollowedAndNotJudged) {
  std::vector<RecordComparison> rs;
  TensorPair empty_out = pair(Role::Output, 0, Verdict::Pass);
  empty_out.metrics.compared = false;
  empty_out.has_stats0 = empty_out.has_stats1 = false;
  rs.push_back(record("aten::empty.0.fwd", Pass::Forward, {empty_out}, 0));
  TensorPair garbage_in = pair(Role::Input, 5, Verdict::Fail), garbage_out = pair(Role::Output, 5, Verdict::Fail);
  garbage_in.stats0.checksum = garbage_out.stats0.checksum = 111;
  garbage_in.stats1.checksum = garbage_out.stats1.checksum = 222;
  rs.push_back(record("aten::detach.1.fwd", Pass::Forward, {garbage_in, garbage_out}, 1));
  TensorPair init_out = pair(Role::Output, 0, Verdict::Pass);
  init_out.stats0.checksum = init_out.stats1.checksum = 333;
  rs.push_back(record("aten::uniform_.2.fwd", Pass::Forward, {garbage_in, init_out}, 2));
  judgeRecords(rs, defaultThresholds());
  for (const RecordComparison& r : rs) {
    EXPECT_EQ(r.verdict, Verdict::Pass) << r.name;
    EXPECT_FALSE(r.origin) << r.name;
  }
  EXPECT_TRUE(rs[1].tensors[0].uninitialized);
  EXPECT_TRUE(rs[1].tensors[1].uninitialized);
  EXPECT_TRUE(rs[2].tensors[0].uninitialized);
  EXPECT_FALSE(rs[2].tensors[1].uninitialized);
}

TEST(CompareOrigins, LocationSkipsTorchFrames) {
  EXPECT_EQ(userLocation({"/usr/lib/python3/dist-packages/torch/nn/modules/activation.py:684 forward",
                          "/home/me/train.py:38 main", "/home/me/train.py:47 <module>"}),
            "/home/me/train.py:38 main");
  EXPECT_EQ(userLocation({"libtorch.so+0x10 at::foo"}), "libtorch.so+0x10 at::foo");
  EXPECT_EQ(userLocation({}), "");
}

}  // namespace
}  // namespace acc::analyzer
