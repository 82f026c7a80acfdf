// torch.compile (torch 2.x): what acc records of a compiled model, and
// ACC_EAGER=1, which turns compilation off so that every op is recorded.
// Torch 1.13 has no torch.compile: the tests say so and skip.
#include <gtest/gtest.h>

#include <set>

#include "tests/e2e/harness.h"

namespace acc::test {
namespace {

bool hasCompile() {
  static const bool yes =
      run({{python(), "-c", "import torch, sys; sys.exit(0 if hasattr(torch, 'compile') else 1)"}, {}, "", false, ""})
          .exit_code == 0;
  return yes;
}

// The second training step's records. Torch 2.1 and 2.2's dynamo strips
// Optimizer.step of its profiler scope, by which acc counts steps, so there
// every record of a compiled run is in step 0 (docs/guide/recording.md, "torch.compile"):
// the second step then starts after the first step's loss.item().
std::vector<const format::OpRecord*> secondStep(const Recording& rec) {
  std::vector<const format::OpRecord*> out;
  for (const auto& r : rec.records) {
    if (r.step == 1) out.push_back(&r);
  }
  const std::string torch = majorMinor(rec.manifest["torch_version"].get<std::string>());
  if (!out.empty() || (torch != "2.1" && torch != "2.2")) return out;
  bool after_item = false;
  for (const auto& r : rec.records) {
    if (after_item) out.push_back(&r);
    after_item = after_item || r.op == "aten::item";
  }
  return out;
}

// A compiled model's forward is one op, CompiledFunction, recorded with the
// graph's inputs (parameters and data); its backward node with the incoming
// gradients; the kernels inductor fused are not seen one by one.
TEST(TorchCompile, CompiledCallIsRecordedWithItsInputs) {
  if (!hasCompile()) GTEST_SKIP() << "this torch has no torch.compile (1.13)";
  RunResult plain = runPythonPlain(testScript("compiled_train.py"));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  TempDir dir;
  RunResult r = recordPython(testScript("compiled_train.py"), dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lossLines(r.out), lossLines(plain.out));
  EXPECT_EQ(lossLines(r.out).size(), 2u);
  // acc's module hooks are global: torch.compile(module) would warn of them
  // on every call (torch 2.2+) were they not left out of its check.
  EXPECT_EQ(withoutLogStamps(withoutAccLines(r.err)), withoutLogStamps(plain.err));
  EXPECT_EQ(r.err.find("global hooks"), std::string::npos) << r.err;
  Recording rec = readRank(dir / "rank0");
  const format::OpRecord *fwd = nullptr, *bwd = nullptr;
  for (const format::OpRecord* op : secondStep(rec)) {
    EXPECT_EQ(op->op.find("Torch-Compiled Region"), std::string::npos) << op->name;
    EXPECT_NE(op->op, "aten::gelu") << "fused by inductor, not dispatched: " << op->name;
    if (op->op == "CompiledFunction" && op->pass == format::Pass::Forward) fwd = op;
    if (op->op == "CompiledFunction" && op->pass == format::Pass::Backward) bwd = op;
  }
  ASSERT_NE(fwd, nullptr);
  size_t inputs = 0;
  for (const auto& t : fwd->tensors) inputs += t.role == format::Role::Input && t.has_stats;
  EXPECT_EQ(inputs, 5u) << "four parameters and the data";
  ASSERT_NE(bwd, nullptr);
  EXPECT_EQ(bwd->forward_name, fwd->name);
  EXPECT_EQ(bwd->grad_fn, "CompiledFunctionBackward");
  ASSERT_FALSE(bwd->tensors.empty());
  EXPECT_EQ(bwd->tensors[0].role, format::Role::GradIn);
}

// ACC_EAGER=1 turns torch.compile off through torch's own switch: the model
// runs op by op, every op is recorded, and the losses are those of the
// uncompiled model.
TEST(TorchCompile, EagerModeRecordsEveryOp) {
  if (!hasCompile()) GTEST_SKIP() << "this torch has no torch.compile (1.13)";
  RunResult eager = runPythonPlain(testScript("compiled_train.py"), {{"TORCH_COMPILE_DISABLE", "1"}});
  ASSERT_EQ(eager.exit_code, 0) << eager.err;
  TempDir dir;
  RunResult r = recordPython(testScript("compiled_train.py"), dir.path(), {{"ACC_EAGER", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lossLines(r.out), lossLines(eager.out));
  Recording rec = readRank(dir / "rank0");
  EXPECT_EQ(rec.manifest["config"]["eager"], true);
  std::set<std::string> ops;
  for (const format::OpRecord* op : secondStep(rec)) ops.insert(op->op + (op->pass == format::Pass::Forward ? ".fwd" : ".bwd"));
  for (const char* expected : {"aten::linear.fwd", "aten::gelu.fwd", "aten::gelu.bwd", "aten::linear.bwd"}) {
    EXPECT_TRUE(ops.count(expected)) << expected;
  }
  // Module paths are the model's own, not those of torch.compile's wrapper
  // ("_orig_mod.0").
  std::set<std::string> modules;
  for (const format::OpRecord* op : secondStep(rec)) {
    if (op->pass == format::Pass::Forward) modules.insert(op->module);
  }
  EXPECT_TRUE(modules.count("0")) << ::testing::PrintToString(modules);
  EXPECT_TRUE(modules.count("1")) << ::testing::PrintToString(modules);
  for (const std::string& m : modules) EXPECT_EQ(m.find("_orig_mod"), std::string::npos) << m;
  EXPECT_FALSE(ops.count("CompiledFunction.fwd"));
}

// ACC_OVERRIDE cannot reach ops inside compiled code: it says so once and
// counts the compiled calls; with ACC_EAGER=1 the ops run one by one and
// are overridden.
TEST(TorchCompile, OverrideSaysCompiledOpsAreNotOverridden) {
  if (!hasCompile()) GTEST_SKIP() << "this torch has no torch.compile (1.13)";
  const std::string line = "acc: ACC_OVERRIDE: this program runs torch.compile'd code";
  TempDir compiled, eager;
  RunResult r = recordPython(testScript("compiled_train.py"), compiled.path(), {{"ACC_OVERRIDE", "aten::gelu"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t first = r.err.find(line);
  EXPECT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(line, first + 1), std::string::npos) << "said once";
  const nlohmann::json o = readRank(compiled / "rank0").manifest["override"];
  EXPECT_GT(o["compiled_calls"].get<uint64_t>(), 0u) << o.dump();
  EXPECT_EQ(o["ops"][0]["calls"], 0) << o.dump();
  // While dynamo traces the model, gelu runs on fake tensors (on torch 2.6
  // and 2.14 at least): left alone, counted. The program once crashed
  // there (exit 139, ASSERT_EQ above), reading memory they do not have.
  EXPECT_TRUE(o["without_memory"].is_number()) << o.dump();

  RunResult e = recordPython(testScript("compiled_train.py"), eager.path(),
                             {{"ACC_OVERRIDE", "aten::gelu"}, {"ACC_EAGER", "1"}});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(e.err.find(line), std::string::npos) << e.err;
  const nlohmann::json oe = readRank(eager / "rank0").manifest["override"];
  EXPECT_EQ(oe["ops"][0]["calls"], 2) << "one GELU, two steps: " << oe.dump();
  EXPECT_EQ(oe["compiled_calls"], 0);
}

}  // namespace
}  // namespace acc::test
