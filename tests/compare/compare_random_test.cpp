// ACC_RANDOM on tests/scripts/dropout_train.py (a transformer with dropout):
// two runs whose generators draw differently part at the first dropout;
// with the reference's draws replayed they agree again, and a wrong kernel
// among them is named. Saving changes nothing; replaying changes only the
// draws, and what it cannot replay it says.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "analyzer/read/recording.h"
#include "tests/compare/recordings.h"

namespace acc::test {
namespace {
namespace fs = std::filesystem;

const std::string kScript = "dropout_train.py";

// The reference: seed 0, its draws saved (cached per build).
std::string reference() {
  return cachedRecording("dropout_ref_l2", testScript(kScript), {{"ACC_RANDOM", "save"}, {"ACC_LEVEL", "2"}});
}

RunResult record(const TempDir& dir, std::map<std::string, std::string> env) {
  env.emplace("ACC_LEVEL", "2");
  RunResult r = recordPython(testScript(kScript), dir.path(), env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r;
}

nlohmann::json randomOf(const std::string& dir) {
  return readRank(dir + "/rank0").manifest["random"];
}

// random.acc's records, in file order.
std::vector<format::OpRecord> draws(const std::string& dir) {
  std::vector<format::OpRecord> out;
  analyzer::forEachRecord(dir + "/rank0/random.acc", [&](const analyzer::RawRecord& r) {
    if (r.kind == format::RecordKind::Op) out.push_back(r.decodeOp(true));
  });
  return out;
}

TEST(RandomOps, SavingChangesNothingAndKeepsEveryDraw) {
  const std::string ref = reference();
  RunResult plain = runPythonPlain(testScript(kScript));
  TempDir again;
  RunResult r = record(again, {{"ACC_RANDOM", "save"}});
  EXPECT_EQ(lossLines(r.out), lossLines(plain.out));
  EXPECT_NE(r.err.find("saved to random.acc"), std::string::npos) << r.err;
  // The same records as a run without ACC_RANDOM: no op of acc's is seen.
  TempDir without;
  record(without, {});
  EXPECT_EQ(readRank(again / "rank0").names(), readRank(without / "rank0").names());

  const nlohmann::json m = randomOf(ref);
  EXPECT_EQ(m["mode"], "save");
  const std::vector<format::OpRecord> saved = draws(ref);
  EXPECT_EQ(m["saved"], saved.size());
  EXPECT_EQ(m["draws"], saved.size());
  EXPECT_EQ(m["lost"], 0);
  // Per step: three dropouts, each one bernoulli_ mask of 0s and 1s, named
  // after the dropout record it ran in.
  const Recording rec = readRank(ref + "/rank0");
  for (int64_t step : {0, 1}) {
    std::vector<const format::OpRecord*> masks;
    for (const auto& d : saved) {
      if (d.step == step && d.forward_name == "aten::dropout") masks.push_back(&d);
    }
    ASSERT_EQ(masks.size(), 3u) << "step " << step;
    for (size_t k = 0; k < masks.size(); ++k) {
      const format::OpRecord& d = *masks[k];
      EXPECT_EQ(d.op, "aten::bernoulli_");
      EXPECT_EQ(d.op_number, k) << d.name;  // the step's k-th dropout
      const std::string outer = d.name.substr(0, d.name.find('/'));
      const format::OpRecord* dropout = rec.find(outer);
      ASSERT_NE(dropout, nullptr) << d.name;
      EXPECT_EQ(dropout->step, step);
      EXPECT_EQ(d.name, outer + "/aten::bernoulli_.0");
      ASSERT_EQ(d.tensors.size(), 1u);
      ASSERT_TRUE(d.tensors[0].has_data);
      EXPECT_EQ(d.tensors[0].shape, dropout->tensors[0].shape);
      const float* v = reinterpret_cast<const float*>(d.tensors[0].data.data());
      size_t ones = 0;
      for (size_t i = 0; i < d.tensors[0].numel(); ++i) {
        ASSERT_TRUE(v[i] == 0.0f || v[i] == 1.0f) << d.name;
        ones += v[i] == 1.0f;
      }
      EXPECT_GT(ones, d.tensors[0].numel() / 2) << d.name;  // p = 0.1
    }
  }
}

TEST(RandomOps, OtherSeedsDivergeAtTheFirstDropoutWithoutReplay) {
  TempDir dut, out;
  record(dut, {{"DROPOUT_SEED", "1"}});
  Analysis a = analyze({"compare", reference(), dut.path()}, out.path());
  EXPECT_EQ(a.run.exit_code, 1) << a.run.out << a.run.err;
  const nlohmann::json& first = a.summary["first_divergence"];
  ASSERT_TRUE(first.is_object()) << a.run.out;
  EXPECT_EQ(first["op"], "aten::dropout") << a.run.out;
  EXPECT_EQ(first["step"], 0);
  // compare says why a dropout parts two runs, and what to do.
  EXPECT_NE(a.run.out.find("draws random numbers"), std::string::npos) << a.run.out;
  EXPECT_NE(a.run.out.find("ACC_RANDOM=save"), std::string::npos) << a.run.out;
}

TEST(RandomOps, ReplayGivesTheRunUnderTestTheReferencesDraws) {
  const std::string ref = reference();
  TempDir dut, out;
  RunResult r = record(dut, {{"DROPOUT_SEED", "1"}, {"ACC_RANDOM", ref}});
  RunResult ref_plain = runPythonPlain(testScript(kScript));
  RunResult seed1_plain = runPythonPlain(testScript(kScript), {{"DROPOUT_SEED", "1"}});
  // The numbers change on purpose: those of the reference, not seed 1's.
  EXPECT_EQ(lossLines(r.out), lossLines(ref_plain.out));
  EXPECT_NE(lossLines(r.out), lossLines(seed1_plain.out));
  EXPECT_NE(r.err.find("this run's numbers change on purpose"), std::string::npos) << r.err;
  const nlohmann::json m = randomOf(dut.path());
  EXPECT_EQ(m["mode"], "replay");
  EXPECT_EQ(m["replayed"], randomOf(ref)["saved"]);
  EXPECT_EQ(m["unmatched"], 0);
  EXPECT_EQ(m["mismatched"], 0);
  EXPECT_EQ(m["unused"], 0);
  EXPECT_EQ(m["errors"], 0);
  EXPECT_TRUE(m["notes"].empty()) << m.dump();
  // Replay runs no op anyone sees: the records are the reference's.
  EXPECT_EQ(readRank(dut / "rank0").names(), readRank(ref + "/rank0").names());
  Analysis a = analyze({"compare", ref, dut.path()}, out.path());
  EXPECT_EQ(a.run.exit_code, 0) << a.run.out << a.run.err;
  EXPECT_TRUE(a.summary["origins"].empty()) << a.run.out;
}

TEST(RandomOps, ReplayWithAWrongKernelNamesTheKernel) {
  TempDir dut, out;
  record(dut, {{"DROPOUT_SEED", "1"}, {"ACC_RANDOM", reference()}, {"WRONG_GELU_LIB", ACC_WRONG_GELU_LIB}});
  Analysis a = analyze({"compare", reference(), dut.path()}, out.path());
  EXPECT_EQ(a.run.exit_code, 1) << a.run.out << a.run.err;
  const nlohmann::json& first = a.summary["first_divergence"];
  ASSERT_TRUE(first.is_object()) << a.run.out;
  EXPECT_EQ(first["op"], "aten::gelu") << a.run.out;
  EXPECT_EQ(first["origin"], true);
  for (const auto& origin : a.summary["origins"]) EXPECT_EQ(origin["op"], "aten::gelu") << origin.dump();
}

TEST(RandomOps, DrawsOfAnotherShapeAreCountedNamedAndLeftAlone) {
  TempDir dut;
  RunResult r = record(dut, {{"BATCH", "2"}, {"ACC_RANDOM", reference()}});
  RunResult plain = runPythonPlain(testScript(kScript), {{"BATCH", "2"}});
  const nlohmann::json m = randomOf(dut.path());
  // The six dropout masks are half the reference's size; the tokens' draw
  // too. The model's initial draws fit and are replayed (they are equal).
  EXPECT_EQ(m["mismatched"], 7) << m.dump();
  EXPECT_EQ(m["unmatched"], 0) << m.dump();
  EXPECT_EQ(m["replayed"].get<int>() + 7, m["draws"].get<int>()) << m.dump();
  ASSERT_FALSE(m["notes"].empty());
  EXPECT_NE(m["notes"][0].get<std::string>().find("in the reference"), std::string::npos) << m.dump();
  EXPECT_NE(r.err.find("7 of another shape or type"), std::string::npos) << r.err;
  // Left alone: the program computes what it computes unrecorded.
  EXPECT_EQ(lossLines(r.out), lossLines(plain.out));
}

TEST(RandomOps, StepsAfterTheLastSelectedOneAreNotSaved) {
  TempDir dir;
  record(dir, {{"ACC_RANDOM", "save"}, {"ACC_STEPS", "0"}});
  std::set<int64_t> steps;
  for (const auto& d : draws(dir.path())) steps.insert(d.step);
  EXPECT_EQ(steps, std::set<int64_t>{0});
}

TEST(RandomOps, AReplaySourceWithoutDrawsIsNamed) {
  // A recording made without ACC_RANDOM=save holds no random.acc.
  TempDir plain, dut;
  record(plain, {});
  RunResult r = recordPython(testScript(kScript), dut.path(), {{"ACC_RANDOM", plain.path()}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("acc: ACC_RANDOM=\"" + plain.path() + "\" is invalid; allowed: off, save"),
            std::string::npos)
      << r.err;
}

// The test accelerator draws its own masks (its fused native_dropout on
// torch 2.x, its bernoulli_ on 1.13): the CPU's draws replay into them, and
// the device's into the CPU, converting float masks to bool and back.
TEST(RandomOps, DrawsReplayBetweenTheCpuAndTheTestAccelerator) {
  const std::map<std::string, std::string> device = {{"DEVICE", "testdev"}, {"TESTDEV_LIB", ACC_TESTDEV_LIB}};
  TempDir plain, aligned, out0, out1;
  std::map<std::string, std::string> env = device;
  record(plain, env);
  Analysis unaligned = analyze({"compare", reference(), plain.path()}, out0.path());
  EXPECT_EQ(unaligned.run.exit_code, 1) << unaligned.run.out;
  EXPECT_EQ(unaligned.summary["first_divergence"]["op"], "aten::dropout") << unaligned.run.out;

  env["ACC_RANDOM"] = reference();
  record(aligned, env);
  const nlohmann::json m = randomOf(aligned.path());
  EXPECT_EQ(m["replayed"], m["draws"]) << m.dump();
  EXPECT_EQ(m["mismatched"], 0) << m.dump();
  Analysis a = analyze({"compare", reference(), aligned.path()}, out1.path());
  EXPECT_EQ(a.run.exit_code, 0) << a.run.out << a.run.err;

  // The device as the reference: its masks are copied to the host behind
  // its kernels and replayed into the CPU run.
  TempDir device_ref, cpu_dut, out2;
  env = device;
  env["ACC_RANDOM"] = "save";
  record(device_ref, env);
  EXPECT_EQ(randomOf(device_ref.path())["lost"], 0);
  record(cpu_dut, {{"ACC_RANDOM", device_ref.path()}, {"DROPOUT_SEED", "7"}});
  const nlohmann::json c = randomOf(cpu_dut.path());
  EXPECT_EQ(c["replayed"], c["draws"]) << c.dump();
  Analysis b = analyze({"compare", device_ref.path(), cpu_dut.path()}, out2.path());
  EXPECT_EQ(b.run.exit_code, 0) << b.run.out << b.run.err;
}

}  // namespace
}  // namespace acc::test
