// ACC_WATCH=naninf end to end (recorder/watch/watch.h), on tests/scripts/
// device_train.py: a NaN a test kernel writes at a chosen call is found at
// that call, forward and backward, on the CPU (tests/compare/wrong_kernel)
// and on the test accelerator (TESTDEV_NAN_CALL); the find is written at
// level 2 after the metadata of the ACC_WATCH_CONTEXT ops before it and
// nothing else is written; a NaN the program hands in is told apart from
// one an op makes; half and bfloat16 overflow counts; losses stay
// bit-identical, and ACC_WATCH_ABORT=1 stops the program with status 3; on
// the device the watch adds no host synchronisation.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/accelerator/device_train_env.h"
#include "tests/e2e/harness.h"

namespace acc::test {
namespace {

// A NaN at gelu's call `call` (from 0), forward ("fwd") or backward ("bwd").
Env nanOnCpu(const std::string& pass, int call) {
  return {{"WRONG_GELU_LIB", ACC_WRONG_GELU_LIB}, {"WRONG_GELU", "nan-" + pass},
          {"WRONG_GELU_CALL", std::to_string(call)}};
}

Env nanOnDevice(const std::string& pass, int call) {
  return onDevice({{"TESTDEV_WRONG_OP", pass == "fwd" ? "gelu" : "gelu_backward"},
                   {"TESTDEV_NAN_CALL", std::to_string(call)}});
}

Env with(Env env, const Env& more) {
  for (const auto& [k, v] : more) env[k] = v;
  return env;
}

// The names of a level-0 recording of the same program without the NaN, in
// execution order: what the watch must name.
std::vector<std::string> referenceNames(const Env& env) {
  static std::map<Env, std::vector<std::string>> cache;
  auto it = cache.find(env);
  if (it != cache.end()) return it->second;
  TempDir dir;
  RunResult r = recordPython(script(), dir.path(), with(env, {{"ACC_LEVEL", "0"}}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> names;
  for (const auto& rec : readRank(dir / "rank0").records) names.push_back(rec.name);
  return cache[env] = names;
}

// Where the `call`th record of gelu's forward ("fwd") or backward ("bwd")
// pass lies (names repeat from step to step), names.size() if nowhere.
size_t nthGelu(const std::vector<std::string>& names, const std::string& pass, int call) {
  int seen = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (n.rfind("aten::gelu.", 0) == 0 && n.find("." + pass) != std::string::npos && seen++ == call) return i;
  }
  return names.size();
}

// Runs the program watched, and checks what every find must hold: the
// losses of the unwatched run, the stderr line, the records (the context
// then the find at level 2) and the manifest. `base` is the program's
// environment without the NaN.
void expectFound(const Env& base, const Env& nan, const std::string& pass, int call) {
  const std::vector<std::string> names = referenceNames(base);
  const size_t at = nthGelu(names, pass, call);
  ASSERT_LT(at, names.size()) << "no gelu " << pass << " call " << call;
  const std::string expected = names[at];
  RunResult plain = runPythonPlain(script(), nan);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  TempDir dir;
  RunResult r = recordPython(script(), dir.path(), with(nan, {{"ACC_WATCH", "naninf"}, {"ACC_WATCH_CONTEXT", "5"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lossLines(r.out), lossLines(plain.out));
  EXPECT_EQ(lossLines(r.out).size(), 3u);
  EXPECT_NE(r.err.find("ACC_WATCH: " + expected + " (step "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("made the first NaN/Inf, in output 0, from finite inputs"), std::string::npos) << r.err;

  const Recording rec = readRank(dir / "rank0");
  ASSERT_EQ(rec.records.size(), 6u) << "5 context records and the find";
  const format::OpRecord& find = rec.records.back();
  EXPECT_EQ(find.name, expected);
  // The context: the 5 ops before it, as the unwatched recording has them,
  // metadata only.
  ASSERT_GE(at, 5u);
  for (size_t i = 0; i < 5; ++i) {
    const format::OpRecord& c = rec.records[i];
    EXPECT_EQ(c.name, names[at - 5 + i]);
    for (const format::Tensor& t : c.tensors) EXPECT_FALSE(t.has_stats || t.has_data) << c.name;
  }
  // The find at level 2: its inputs finite, output 0 with the NaN.
  bool nan_output = false, inputs = false;
  for (const format::Tensor& t : find.tensors) {
    ASSERT_TRUE(t.has_stats && t.has_data) << find.name << " role " << static_cast<int>(t.role);
    const bool input = t.role == format::Role::Input || t.role == format::Role::GradIn;
    if (input) {
      inputs = true;
      EXPECT_EQ(t.stats.nan_count + t.stats.inf_count, 0u);
    } else if (t.position == 0) {
      nan_output = t.stats.nan_count == 1;
    }
  }
  EXPECT_TRUE(inputs);
  EXPECT_TRUE(nan_output);
  EXPECT_TRUE(find.has_module);
  const nlohmann::json& w = rec.manifest["watch"];
  EXPECT_EQ(w["status"], "found") << w.dump();
  EXPECT_EQ(w["record"], expected);
  EXPECT_EQ(w["step"], find.step);
  EXPECT_EQ(w["nonfinite_outputs"], nlohmann::json::array({0}));
  EXPECT_EQ(w["nonfinite_inputs"], nlohmann::json::array());
  EXPECT_EQ(w["context_records"], 5);
  EXPECT_EQ(w["tensors_held"], true);
  EXPECT_EQ(rec.manifest["counts"]["written"], 6) << rec.manifest.dump();
  EXPECT_EQ(rec.manifest["counts"]["dropped"], 0);
  // The analyzer's list says it too.
  RunResult list = analyzer({"list", dir.path()});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("watch: " + expected), std::string::npos) << list.out;
}

TEST(Watch, FindsTheForwardCallThatMadeANaNOnTheCpu) {
  // Call 3: step 1's second gelu (two per forward pass).
  expectFound({}, nanOnCpu("fwd", 3), "fwd", 3);
}

TEST(Watch, FindsTheBackwardCallThatMadeANaNOnTheCpu) {
  expectFound({}, nanOnCpu("bwd", 2), "bwd", 2);
}

TEST(Watch, FindsTheForwardCallThatMadeANaNOnTheDevice) {
  expectFound(onDevice(), nanOnDevice("fwd", 3), "fwd", 3);
}

TEST(Watch, FindsTheBackwardCallThatMadeANaNOnTheDevice) {
  expectFound(onDevice(), nanOnDevice("bwd", 1), "bwd", 1);
}

// A device far behind its host: every op awaits its check, the watch holds
// the tensors of the oldest kHeldOps (256) only, and a find beyond them is
// still named, with metadata only, and says so.
TEST(Watch, AFindTheDeviceLeftFarBehindKeepsItsNameAndSaysItsTensorsWereLetGo) {
  const Env slow = onDevice({{"TESTDEV_EVENT_DELAY_US", "2000000"}, {"STEPS", "8"}});
  const std::vector<std::string> names = referenceNames(slow);
  const size_t at = nthGelu(names, "bwd", 14);  // step 7
  ASSERT_LT(at, names.size());
  ASSERT_GT(at, 300u) << "the find must lie beyond the 256 held ops";
  const std::string expected = names[at];
  TempDir dir;
  RunResult r = recordPython(script(), dir.path(),
                             with(slow, {{"TESTDEV_WRONG_OP", "gelu_backward"}, {"TESTDEV_NAN_CALL", "14"},
                                         {"ACC_WATCH", "naninf"}, {"ACC_WATCH_CONTEXT", "3"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ACC_WATCH: " + expected + " (step 7"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("its tensors were let go before its check arrived (more than 256 ops or 256 MiB, ACC_BUFFER_MB"), std::string::npos)
      << r.err;
  const Recording rec = readRank(dir / "rank0");
  ASSERT_EQ(rec.records.size(), 4u);
  EXPECT_EQ(rec.records.back().name, expected);
  for (const format::Tensor& t : rec.records.back().tensors) EXPECT_FALSE(t.has_stats || t.has_data);
  EXPECT_EQ(rec.manifest["watch"]["status"], "found");
  EXPECT_EQ(rec.manifest["watch"]["tensors_held"], false);
}

// SGD's momentum buffer on the device: each step's `buf.mul_` overwrites
// what the last step's `buf.add_` left. The watch knows that value from the
// add_'s own check (no batch entry, so no launch when mul_ writes it:
// manifest `overwritten_known`), and still names the mul_ that makes a
// NaN, from finite inputs.
TEST(Watch, AnInPlaceOpOnTheDeviceIsJudgedFromWhatTheOneBeforeItLeft) {
  const Env base = onDevice();
  TempDir clean;
  RunResult quiet = recordPython(script(), clean.path(), with(base, {{"ACC_WATCH", "naninf"}}));
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  const Recording quiet_rec = readRank(clean / "rank0");
  const nlohmann::json& w0 = quiet_rec.manifest["watch"];
  EXPECT_EQ(w0["status"], "none") << w0.dump();
  // Steps 1 and 2 each run mul_ once per parameter (6: three Linear
  // layers); step 2's overwrite step 1's add_ outputs (known), step 1's the
  // clones of step 0 (not in-place: summarised as before).
  EXPECT_GE(w0["overwritten_known"].get<uint64_t>(), 6u) << w0.dump();

  // mul_'s eighth call: step 2, the second parameter's buffer.
  const Env nan = with(base, {{"TESTDEV_WRONG_OP", "mul_.Tensor"}, {"TESTDEV_NAN_CALL", "7"}});
  RunResult plain = runPythonPlain(script(), nan);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  TempDir dir;
  RunResult r = recordPython(script(), dir.path(), with(nan, {{"ACC_WATCH", "naninf"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lossLines(r.out), lossLines(plain.out));
  EXPECT_NE(r.err.find("ACC_WATCH: aten::mul_."), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(step 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("made the first NaN/Inf, in output 0, from finite inputs"), std::string::npos) << r.err;
  const Recording rec = readRank(dir / "rank0");
  const nlohmann::json& w = rec.manifest["watch"];
  EXPECT_EQ(w["status"], "found") << w.dump();
  EXPECT_EQ(w["nonfinite_inputs"], nlohmann::json::array());
  EXPECT_GE(w["overwritten_known"].get<uint64_t>(), 1u) << w.dump();
}

// zero_grad(set_to_none=False), torch 1.13's default, zeroes every gradient
// in place, and the backward pass then adds into the zeros in place
// (AccumulateGrad). The watch takes the zeros at their word (manifest
// `filled_known`), so they never wait in a batch and the backward's write
// costs no launch to count them first: as many early launches as when
// zero_grad lets the gradients go.
TEST(Watch, ZeroedGradientsAreKnownWithoutACount) {
  const auto watched = [](const std::string& zero_grad) {
    TempDir dir;
    RunResult r = recordPython(script(), dir.path(), with(onDevice(), {{"ACC_WATCH", "naninf"}, {"ZERO_GRAD", zero_grad}}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json m = readRank(dir / "rank0").manifest;
    EXPECT_EQ(m["watch"]["status"], "none") << m.dump();
    return m;
  };
  const nlohmann::json zeroed = watched("zero");
  const nlohmann::json let_go = watched("none");
  // Steps 1 and 2 zero 6 gradients each (three Linear layers).
  EXPECT_GE(zeroed["watch"]["filled_known"].get<uint64_t>(), let_go["watch"]["filled_known"].get<uint64_t>() + 12)
      << zeroed["watch"].dump() << let_go["watch"].dump();
  EXPECT_EQ(zeroed["device_stats"]["early"], let_go["device_stats"]["early"])
      << zeroed["device_stats"].dump() << let_go["device_stats"].dump();
}

// The bytes the watch holds count against ACC_BUFFER_MB: with 1 MiB, a
// find early in the first step (a wider model, every op still awaiting its
// check) is let go and says so; with the default it keeps its tensors.
TEST(Watch, TheHeldTensorsAreBoundedByTheBufferBudget) {
  const Env slow = onDevice({{"TESTDEV_EVENT_DELAY_US", "2000000"}, {"STEPS", "2"}, {"WIDTH", "256"},
                             {"BATCH", "256"}});
  const std::vector<std::string> names = referenceNames(slow);
  const size_t at = nthGelu(names, "bwd", 1);
  ASSERT_LT(at, names.size());
  ASSERT_LT(at, 200u) << "the find must lie within the 256 held ops";
  for (const char* budget : {"1", "256"}) {
    SCOPED_TRACE(std::string("ACC_BUFFER_MB=") + budget);
    const bool small = std::string(budget) == "1";
    TempDir dir;
    RunResult r = recordPython(script(), dir.path(),
                               with(slow, {{"TESTDEV_WRONG_OP", "gelu_backward"}, {"TESTDEV_NAN_CALL", "1"},
                                           {"ACC_WATCH", "naninf"}, {"ACC_WATCH_CONTEXT", "0"},
                                           {"ACC_BUFFER_MB", budget}}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("ACC_WATCH: " + names[at] + " (step 0"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("let go before its check arrived") != std::string::npos, small) << r.err;
    if (small) {
      EXPECT_NE(r.err.find("(more than 256 ops or 1 MiB, ACC_BUFFER_MB, awaited"), std::string::npos) << r.err;
    }
    const Recording rec = readRank(dir / "rank0");
    ASSERT_FALSE(rec.records.empty());
    EXPECT_EQ(rec.records.back().name, names[at]);
    EXPECT_EQ(rec.manifest["watch"]["tensors_held"], !small);
    bool data = false;
    for (const format::Tensor& t : rec.records.back().tensors) data = data || t.has_data;
    EXPECT_EQ(data, !small);
  }
}

TEST(Watch, WritesNothingWithoutANaNAndAddsNoHostSynchronisation) {
  for (const Env& env : {Env{}, onDevice({{"FOREACH", "1"}})}) {
    const bool device = env.count("DEVICE") != 0;
    SCOPED_TRACE(device ? "device" : "cpu");
    RunResult plain = runPythonPlain(script(), env);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    TempDir dir;
    RunResult r = recordPython(script(), dir.path(), with(env, {{"ACC_WATCH", "naninf"}}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(lossLines(r.out), lossLines(plain.out));
    EXPECT_NE(r.err.find("acc: watching rank 0 for the first NaN/Inf"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("ACC_WATCH: no NaN or infinity in the "), std::string::npos) << r.err;
    const Recording rec = readRank(dir / "rank0");
    EXPECT_TRUE(rec.records.empty()) << rec.records.size() << " records";
    EXPECT_EQ(rec.manifest["watch"]["status"], "none");
    EXPECT_GT(rec.manifest["watch"]["ops_watched"].get<uint64_t>(), 100u);
    EXPECT_EQ(rec.manifest["config"]["watch"], "naninf");
    if (!device) continue;
    const nlohmann::json base = counters(plain.out), c = counters(r.out);
    ASSERT_FALSE(base.is_null() || c.is_null()) << r.out;
    EXPECT_EQ(c["blocking_copies"], base["blocking_copies"]);
    EXPECT_EQ(c["scalar_reads"], base["scalar_reads"]);
    EXPECT_EQ(c["synchronizations"], base["synchronizations"]);
    EXPECT_GT(c["event_queries"].get<uint64_t>(), 0u);
    // The cost on a device is kernel launches: about two per op checked
    // (aminmax per floating output, one stack and one copy per op).
    const uint64_t ops = rec.manifest["watch"]["ops_watched"].get<uint64_t>();
    const uint64_t added = c["kernels"].get<uint64_t>() - base["kernels"].get<uint64_t>();
    std::cerr << "watch: " << added << " kernels for " << ops << " ops\n";
    EXPECT_LE(static_cast<double>(added) / static_cast<double>(ops), 3.5);
  }
}

// A causal mask of -inf added to attention scores: infinities the program
// means, on the CPU and on the test accelerator. Nothing is found, the run
// is unchanged, and the manifest counts the ops that carried them.
TEST(Watch, TheProgramsOwnInfinitiesInAnAttentionMaskAreNoFind) {
  for (const Env& env : {Env{}, onDevice()}) {
    SCOPED_TRACE(env.empty() ? "cpu" : "device");
    const std::string masked = testScript("masked_attention.py");
    RunResult plain = runPythonPlain(masked, env);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    TempDir dir;
    RunResult r = recordPython(masked, dir.path(), with(env, {{"ACC_WATCH", "naninf"}}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(lossLines(r.out), lossLines(plain.out));
    EXPECT_NE(r.err.find("ACC_WATCH: no NaN or infinity in the "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("but for the program's own infinities (masks) in "), std::string::npos) << r.err;
    const Recording rec = readRank(dir / "rank0");
    EXPECT_TRUE(rec.records.empty());
    const nlohmann::json& w = rec.manifest["watch"];
    EXPECT_EQ(w["status"], "none") << w.dump();
    // Per step: full, triu, the copy to the device (on it), the add.
    EXPECT_GE(w["intended_ops"].get<uint64_t>(), 9u) << w.dump();
    RunResult list = analyzer({"list", dir.path()});
    EXPECT_NE(list.out.find("but for the program's own infinities (masks) in "), std::string::npos) << list.out;
  }
}

// A query row masked whole: softmax makes NaN from the mask's infinities,
// and that NaN is found there, its input named as holding the program's own
// infinities rather than as handed in.
TEST(Watch, ANaNMadeFromTheProgramsOwnInfinitiesIsFound) {
  for (const Env& env : {Env{}, onDevice()}) {
    SCOPED_TRACE(env.empty() ? "cpu" : "device");
    TempDir dir;
    RunResult r = recordPython(testScript("masked_attention.py"), dir.path(),
                               with(env, {{"MASK_ROW", "1"}, {"ACC_WATCH", "naninf"}}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("ACC_WATCH: aten::softmax."), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("(step 1"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("from inputs finite but for the program's own infinities in input 0"), std::string::npos)
        << r.err;
    const Recording rec = readRank(dir / "rank0");
    const nlohmann::json& w = rec.manifest["watch"];
    EXPECT_EQ(w["status"], "found") << w.dump();
    EXPECT_EQ(w["intended_inputs"], nlohmann::json::array({0}));
    EXPECT_EQ(w["nonfinite_inputs"], nlohmann::json::array());
    RunResult list = analyzer({"list", dir.path()});
    EXPECT_NE(list.out.find("from inputs finite but for the program's own infinities in input 0"), std::string::npos)
        << list.out;
  }
}

TEST(Watch, TellsANaNTheProgramHandsInFromOneAnOpMakes) {
  TempDir dir;
  RunResult r = recordPython(script(), dir.path(), {{"NAN_DATA", "1"}, {"ACC_WATCH", "naninf"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ACC_WATCH: the first NaN/Inf was handed to aten::linear."), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("in input 0, made by no op the watch saw"), std::string::npos) << r.err;
  const Recording rec = readRank(dir / "rank0");
  ASSERT_FALSE(rec.records.empty());
  const nlohmann::json& w = rec.manifest["watch"];
  EXPECT_EQ(w["status"], "handed_in") << w.dump();
  EXPECT_EQ(w["nonfinite_inputs"], nlohmann::json::array({0}));
  EXPECT_EQ(rec.records.back().name, w["record"].get<std::string>());
  EXPECT_EQ(rec.records.back().tensors.front().stats.nan_count, 1u);
}

TEST(Watch, HalfAndBfloat16OverflowCounts) {
  for (const char* dtype : {"float16", "bfloat16"}) {
    SCOPED_TRACE(dtype);
    TempDir dir;
    RunResult r = recordPython(testScript("overflow.py"), dir.path(), {{"DTYPE", dtype}, {"ACC_WATCH", "naninf"}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Recording rec = readRank(dir / "rank0");
    ASSERT_FALSE(rec.records.empty()) << r.err;
    const format::OpRecord& find = rec.records.back();
    EXPECT_EQ(find.op, "aten::mul") << r.err;
    EXPECT_EQ(rec.manifest["watch"]["status"], "found");
    for (const format::Tensor& t : find.tensors) {
      if (t.role == format::Role::Output) {
        EXPECT_GT(t.stats.inf_count, 0u);
      } else {
        EXPECT_EQ(t.stats.inf_count + t.stats.nan_count, 0u);
      }
    }
  }
}

TEST(Watch, AbortStopsTheProgramWithStatus3AfterWritingTheFind) {
  TempDir dir;
  RunResult r = recordPython(script(), dir.path(),
                             with(nanOnCpu("fwd", 2), {{"ACC_WATCH", "naninf"}, {"ACC_WATCH_ABORT", "1"}}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("ACC_WATCH_ABORT=1: stopping the program (exit status 3)"), std::string::npos) << r.err;
  EXPECT_LT(lossLines(r.out).size(), 2u) << "the NaN is made in step 1's forward pass";
  const Recording rec = readRank(dir / "rank0");
  EXPECT_EQ(rec.manifest["status"], "complete");
  EXPECT_EQ(rec.manifest["watch"]["status"], "found");
  ASSERT_FALSE(rec.records.empty());
  EXPECT_EQ(rec.records.back().op, "aten::gelu");
  EXPECT_EQ(rec.records.back().step, 1);
}

}  // namespace
}  // namespace acc::test
