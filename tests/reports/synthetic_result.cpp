#include "tests/reports/synthetic_result.h"

#include <cstdint>
#include <algorithm>
#include <cmath>
#include <limits>

namespace acc::test {
namespace {

using analyzer::CompareResult;
using analyzer::RecordComparison;
using analyzer::TensorPair;
using analyzer::Verdict;
using format::Role;

TensorPair pair(Role role, uint32_t position, double rel_l2, Verdict verdict) {
  TensorPair p;
  p.role = role;
  p.position = position;
  p.dtype0 = p.dtype1 = format::Dtype::Float32;
  p.shape0 = p.shape1 = {4, 8};
  p.has_stats0 = p.has_stats1 = true;
  p.stats0 = {-1.5, 2.25, 0.125, 4.5, 0, 0, 0x1234};
  p.stats1 = p.stats0;
  p.stats1.max += rel_l2;
  p.stats1.norm *= 1 + rel_l2;
  p.metrics.compared = true;
  p.metrics.rel_l2 = rel_l2;
  p.metrics.cosine = 1 - rel_l2 * rel_l2 / 2;
  p.metrics.max_abs = rel_l2 * 3;
  p.metrics.max_rel = rel_l2 * 10;
  p.metrics.mean_abs = rel_l2;
  p.metrics.rmse = rel_l2 * 1.5;
  p.metrics.within_1e3 = rel_l2 < 1e-4 ? 1 : 0.25;
  p.metrics.within_5e3 = rel_l2 < 1e-4 ? 1 : 0.5;
  p.metrics.max_ulp = rel_l2 * 8e6;
  p.verdict = verdict;
  return p;
}

RecordComparison record(const std::string& op, uint64_t n, format::Pass pass, int64_t step, uint64_t index,
                        std::vector<TensorPair> tensors) {
  RecordComparison r;
  r.op = op;
  r.name = op + "." + std::to_string(n) + (pass == format::Pass::Forward ? ".fwd" : ".bwd");
  r.pass = pass;
  r.step = step;
  r.index0 = r.index1 = index;
  r.tensors = std::move(tensors);
  for (const TensorPair& p : r.tensors) r.verdict = std::max(r.verdict, p.verdict);
  return r;
}

}  // namespace

CompareResult syntheticResult() {
  const auto fwd = format::Pass::Forward, bwd = format::Pass::Backward;
  const auto pass = Verdict::Pass, warn = Verdict::Warn, fail = Verdict::Fail;
  CompareResult c;
  c.dir0 = "/data/run_cpu & <reference>";
  c.dir1 = "/data/run_device";
  c.records.push_back(record("aten::linear", 0, fwd, 0, 0,
                             {pair(Role::Input, 0, 0, pass), pair(Role::Input, 1, 0, pass), pair(Role::Output, 0, 2e-9, pass)}));
  c.records.push_back(record("aten::relu", 1, fwd, 0, 1, {pair(Role::Input, 0, 2e-9, pass), pair(Role::Output, 0, 1e-9, pass)}));
  c.records.push_back(record("custom::scale<float>&'", 2, fwd, 0, 2, {pair(Role::Output, 0, 5e-8, pass)}));

  RecordComparison gelu = record("aten::gelu", 3, fwd, 0, 3, {pair(Role::Input, 0, 5e-8, pass), pair(Role::Output, 0, 3e-2, fail)});
  gelu.origin = true;
  gelu.input_error = 5e-8;
  gelu.output_error = 3e-2;
  gelu.stack0 = {"/usr/lib/python3/dist-packages/torch/nn/functional.py:1234 gelu",
                 "/home/user/model.py:42 forward<T> & more", "/home/user/train.py:7 <module>"};
  c.records.push_back(gelu);
  c.records.push_back(record("aten::linear", 4, fwd, 0, 4, {pair(Role::Input, 0, 3e-2, fail), pair(Role::Output, 0, 4e-3, warn)}));

  TensorPair nan_pair = pair(Role::Output, 0, std::numeric_limits<double>::quiet_NaN(), fail);
  nan_pair.metrics.nan_mismatch = 2;
  nan_pair.stats1.nan_count = 2;
  nan_pair.stats1.mean = std::numeric_limits<double>::quiet_NaN();
  c.records.push_back(record("aten::mse_loss", 5, fwd, 0, 5, {pair(Role::Input, 0, 4e-3, warn), nan_pair}));

  TensorPair shape = pair(Role::Output, 0, 0, pass);
  shape.shape1 = {2, 4};
  shape.metrics = analyzer::TensorMetrics{};
  shape.metrics.mismatch = "shape [4, 8] vs [2, 4]";
  shape.verdict = fail;
  c.records.push_back(record("aten::view", 6, fwd, 0, 6, {shape}));

  c.records.push_back(record("aten::mse_loss", 5, bwd, 0, 7, {pair(Role::GradIn, 0, 0, pass), pair(Role::GradOut, 0, 2e-3, warn)}));
  RecordComparison linear_bwd = record("aten::linear", 4, bwd, 0, 8,
                                       {pair(Role::GradIn, 0, 2e-3, warn), pair(Role::GradOut, 0, 8e-2, fail),
                                        pair(Role::GradOut, 2, 9e-2, fail)});
  linear_bwd.grad_fn = "AddmmBackward0";
  linear_bwd.origin = true;
  linear_bwd.input_error = 2e-3;
  linear_bwd.output_error = 9e-2;
  linear_bwd.stack0 = {"/home/user/train.py:9 <module>"};
  c.records.push_back(linear_bwd);

  TensorPair stats_only = pair(Role::GradOut, 0, 1e-3, warn);
  stats_only.metrics.from_stats = true;
  stats_only.metrics.cosine = stats_only.metrics.within_1e3 = stats_only.metrics.within_5e3 =
      stats_only.metrics.max_ulp = std::numeric_limits<double>::quiet_NaN();
  c.records.push_back(record("aten::gelu", 3, bwd, 0, 9, {stats_only}));
  c.records.push_back(record("aten::linear", 0, fwd, 1, 10, {pair(Role::Input, 0, 0, pass), pair(Role::Output, 0, 0, pass)}));

  c.origins = {3, 8};
  c.unmatched.push_back({1, "aten::contiguous.7.fwd", "aten::contiguous", 0, 0, 7});
  c.problems.push_back("/data/run_device/rank0/records.acc: 1 corrupt frame(s) skipped");
  c.tensors_compared = 21;
  c.bytes_compared = 21 * 32 * 4 * 2;
  c.seconds = 0.012;
  return c;
}

CompareResult largeResult(size_t records) {
  CompareResult c;
  c.dir0 = "/data/a";
  c.dir1 = "/data/b";
  const size_t origin = records / 2;
  for (size_t i = 0; i < records; ++i) {
    bool after = i >= origin;
    double err = after ? 1e-3 * (1 + static_cast<double>(i - origin) / static_cast<double>(records)) : 1e-8;
    Verdict v = after ? (i == origin ? Verdict::Fail : Verdict::Warn) : Verdict::Pass;
    auto pass = i % 3 == 2 ? format::Pass::Backward : format::Pass::Forward;
    RecordComparison r = record("aten::op" + std::to_string(i % 17), i, pass, static_cast<int64_t>(i / 5000), i,
                                {pair(Role::Input, 0, after && i != origin ? err : 1e-8, Verdict::Pass),
                                 pair(Role::Output, 0, err, v)});
    r.origin = i == origin;
    c.records.push_back(std::move(r));
  }
  c.origins = {origin};
  return c;
}

}  // namespace acc::test
