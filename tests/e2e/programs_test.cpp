// Real programs beyond the MLP: a C++ program linked with libtorch, and
// torchvision's resnet18 training steps.
#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace acc::test {
namespace {

using format::Pass;

TEST(Programs, CppProgramLinkedWithLibtorchIsRecorded) {
  const std::string program = binDir() + "/acc-example-cpp-train";
  TempDir dir;
  RunResult plain = run({{program}, {}, "", false, ""});
  RunResult r = run({{program}, {{"ACC_OUTPUT_DIR", dir.path()}}, "", true, ""});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_NE(plain.out.find("step 2 loss"), std::string::npos);
  Recording rec = readRank(dir / "rank0");
  const auto addmm = rec.named("aten::addmm.");
  ASSERT_FALSE(addmm.empty());
  const auto* first = addmm.front();
  EXPECT_EQ(first->pass, Pass::Forward);
  const auto* bwd = rec.find("aten::addmm." + std::to_string(first->op_number) + ".bwd");
  ASSERT_NE(bwd, nullptr);
  EXPECT_EQ(bwd->grad_fn, "AddmmBackward0");
  EXPECT_EQ(bwd->forward_name, first->name);
  // The C++ optimizer reports no step events: everything is step 0.
  for (const auto& rr : rec.records) EXPECT_EQ(rr.step, 0) << rr.name;
}

TEST(Programs, Resnet18TrainingStepsAreRecordedWithoutChangingThem) {
  const std::map<std::string, std::string> env = {{"RESNET_STEPS", "2"}, {"RESNET_SIZE", "64"}};
  RunResult plain = runPythonPlain(example("resnet_train.py"), env);
  TempDir dir;
  RunResult r = recordPython(example("resnet_train.py"), dir.path(), env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto losses = [](const std::string& out) {
    std::string kept;
    for (size_t pos = 0; (pos = out.find("loss ", pos)) != std::string::npos; pos += 5) {
      kept += out.substr(pos, out.find(' ', pos + 5) - pos) + "\n";
    }
    return kept;
  };
  EXPECT_EQ(losses(r.out), losses(plain.out));
  EXPECT_EQ(std::count(plain.out.begin(), plain.out.end(), '\n'), 2);

  Recording rec = readRank(dir / "rank0");
  size_t convs = 0, conv_bwd = 0, bn = 0;
  for (const auto& rr : rec.records) {
    if (rr.step != 1) continue;
    if (rr.op == "aten::conv2d" && rr.pass == Pass::Forward) ++convs;
    if (rr.op == "aten::conv2d" && rr.pass == Pass::Backward) {
      ++conv_bwd;
      EXPECT_EQ(rr.grad_fn, "ConvolutionBackward0");
      EXPECT_NE(rec.find(rr.forward_name), nullptr);
    }
    if (rr.op == "aten::batch_norm" && rr.pass == Pass::Forward) ++bn;
  }
  EXPECT_EQ(convs, 20u);  // resnet18: stem, 16 in blocks, 3 downsample
  EXPECT_EQ(conv_bwd, 20u);
  EXPECT_EQ(bn, 20u);
  EXPECT_EQ(rec.manifest["counts"]["dropped"], 0);
}

// The benchmark's per-op workload (bench/overhead.py): a transformer LM with
// AdamW, one op per parameter. Recorded at level 2, its losses stay those of
// the unrecorded run, and every parameter's update is recorded every step.
TEST(Programs, TransformerLmWithAdamWIsRecordedWithoutChangingIt) {
  const std::map<std::string, std::string> env = {{"LM_STEPS", "3"}};
  RunResult plain = runPythonPlain(example("transformer_train.py"), env);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  TempDir dir;
  std::map<std::string, std::string> recorded = env;
  recorded["ACC_LEVEL"] = "2";
  RunResult r = recordPython(example("transformer_train.py"), dir.path(), recorded);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lossLines(r.out), lossLines(plain.out));
  EXPECT_EQ(lossLines(plain.out).size(), 3u);
  Recording rec = readRank(dir / "rank0");
  for (int64_t step : {0, 1, 2}) {
    size_t updates = 0;
    for (const auto& rr : rec.records) updates += rr.step == step && rr.op == "aten::addcdiv_";
    EXPECT_EQ(updates, 27u) << "step " << step;  // embedding, 2 x 12 per encoder layer, head weight and bias
  }
  EXPECT_EQ(rec.manifest["counts"]["dropped"], 0);
}

}  // namespace
}  // namespace acc::test
