// Distributed runs: tests/scripts/ddp_train.py (DDP, gloo, CPU) on 2 ranks.
// Each rank records its own directory, collectives hold their results as
// the backend delivered them, and compare names the rank and op of a kernel
// made wrong on one rank.
//
// Where the ranks come from: torchrun on torch 1.13, whose launcher process
// must not be recorded (Debian 12's torchrun needs --redirects and --tee
// under Python 3.11); by hand with torchrun's variables on Debian's torch
// 2.6 and 2.14, whose torchrun cannot start a rank at all (built without
// libuv, its rendezvous store asks for libuv whatever USE_LIBUV says).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "tests/compare/recordings.h"

namespace acc::test {
namespace {
namespace fs = std::filesystem;

bool torch2() {
  static const bool yes = [] {
    RunResult r = run({{python(), "-c", "import torch; print(torch.__version__)"}, {}, "", false, ""});
    return r.out.rfind("1.", 0) != 0;
  }();
  return yes;
}

// How launch_ranks.py starts the ranks (see the top of this file).
std::map<std::string, std::string> launch() {
  const std::string logs = ::testing::TempDir() + "/acc-torchrun-logs";
  return {{"LAUNCH_SCRIPT", testScript("ddp_train.py")},
          {"LAUNCH_TORCHRUN", torch2() ? "0" : "1"},
          {"LAUNCH_TORCHRUN_ARGS", "--redirects 1 --tee 1 --log_dir " + logs}};
}

// Both ranks of ddp_train.py recorded into `dir` at level 2.
RunResult recordRanks(const std::string& dir, std::map<std::string, std::string> env = {}) {
  env.merge(launch());
  env.emplace("ACC_LEVEL", "2");
  RunResult r = recordPython(testScript("launch_ranks.py"), dir, env);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return r;
}

std::string reference() {
  std::map<std::string, std::string> env = launch();
  env["ACC_LEVEL"] = "2";
  return cachedRecording("ddp_ref", testScript("launch_ranks.py"), env);
}

std::vector<float> floats(const format::Tensor& t) {
  std::vector<float> v(t.numel());
  EXPECT_EQ(t.data.size(), v.size() * sizeof(float));
  std::memcpy(v.data(), t.data.data(), std::min(t.data.size(), v.size() * sizeof(float)));
  return v;
}

const format::Tensor* tensorOf(const format::OpRecord& r, format::Role role) {
  for (const format::Tensor& t : r.tensors) {
    if (t.role == role && t.position == 0 && t.item == 0) return &t;
  }
  return nullptr;
}

TEST(Ranks, EachRankRecordsItsOwnDirectoryAndItsCollectivesResults) {
  TempDir dir;
  RunResult r = recordRanks(dir.path());
  RunResult plain = run({{python(), testScript("launch_ranks.py")}, launch(), "", false, ""});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  // Recording changes no rank's losses (torchrun interleaves the ranks' lines).
  auto sorted = [](std::vector<std::string> lines) {
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  EXPECT_EQ(sorted(lossLines(r.out)), sorted(lossLines(plain.out)));
  EXPECT_EQ(lossLines(r.out).size(), 4u) << r.out;
  // One directory per rank, none for a launcher.
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(dir.path())) entries.push_back(e.path().filename().string());
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"rank0", "rank1"}));

  Recording rank[2] = {readRank(dir / "rank0"), readRank(dir / "rank1")};
  for (int k : {0, 1}) EXPECT_EQ(rank[k].manifest["rank"], k);
  // DDP's gradient all-reduce (one bucket) in each step, named apart from
  // the ops (their numbers are those of a run on one process).
  for (int64_t step : {0, 1}) {
    const format::OpRecord* reduce[2] = {nullptr, nullptr};
    for (int k : {0, 1}) {
      for (const auto& rec : rank[k].records) {
        if (rec.op == "c10d::allreduce_" && rec.step == step) reduce[k] = &rec;
      }
      ASSERT_NE(reduce[k], nullptr) << "rank " << k << " step " << step;
      EXPECT_EQ(reduce[k]->name.rfind("c10d::allreduce_.", 0), 0u) << reduce[k]->name;
    }
    const format::Tensor* in[2] = {tensorOf(*reduce[0], format::Role::Input), tensorOf(*reduce[1], format::Role::Input)};
    const format::Tensor* out[2] = {tensorOf(*reduce[0], format::Role::Output), tensorOf(*reduce[1], format::Role::Output)};
    for (int k : {0, 1}) {
      ASSERT_TRUE(in[k] && in[k]->has_data) << k;
      ASSERT_TRUE(out[k] && out[k]->has_data) << k;
    }
    // Each output is the sum of both ranks' inputs, as the backend
    // delivered it after the op returned: never the input read too early.
    const std::vector<float> a = floats(*in[0]), b = floats(*in[1]), x = floats(*out[0]), y = floats(*out[1]);
    ASSERT_EQ(a.size(), x.size());
    size_t differ = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(x[i], a[i] + b[i]) << "step " << step << " element " << i;
      EXPECT_EQ(x[i], y[i]) << "step " << step << " element " << i;
      differ += x[i] != a[i];
    }
    EXPECT_GT(differ, x.size() / 2) << "step " << step;
    EXPECT_EQ(rank[0].manifest["counts"]["collectives_unfinished"], 0);
  }
}

TEST(Ranks, AWrongKernelOnOneRankIsNamedOnThatRank) {
  TempDir dut, out;
  recordRanks(dut.path(), {{"WRONG_GELU_LIB", ACC_WRONG_GELU_LIB}, {"WRONG_GELU_RANK", "1"}});
  Analysis a = analyze({"compare", reference(), dut.path()}, out.path());
  EXPECT_EQ(a.run.exit_code, 1) << a.run.out << a.run.err;
  const nlohmann::json& first = a.summary["first_divergence"];
  ASSERT_TRUE(first.is_object()) << a.run.out;
  EXPECT_EQ(first["op"], "aten::gelu") << a.run.out;
  EXPECT_EQ(first["rank"], 1) << a.run.out;
  EXPECT_EQ(first["step"], 0);
  EXPECT_EQ(first["origin"], true);
  // Rank 0 receives the error through the all-reduce: never an origin there.
  ASSERT_FALSE(a.summary["origins"].empty());
  for (const auto& origin : a.summary["origins"]) {
    EXPECT_EQ(origin["op"], "aten::gelu") << origin.dump();
    EXPECT_EQ(origin["rank"], 1) << origin.dump();
  }

  // Rank 0 alone: the first failing record is its all-reduce, whose
  // difference came from the other rank, and compare says so.
  TempDir ref0, dut0, out0;
  fs::copy(reference() + "/rank0", ref0 / "rank0", fs::copy_options::recursive);
  fs::copy(dut / "rank0", dut0 / "rank0", fs::copy_options::recursive);
  Analysis b = analyze({"compare", ref0.path(), dut0.path()}, out0.path());
  EXPECT_EQ(b.run.exit_code, 1) << b.run.out;
  EXPECT_EQ(b.summary["first_divergence"]["op"], "c10d::allreduce_") << b.run.out;
  EXPECT_EQ(b.summary["first_divergence"]["from_other_ranks"], true) << b.run.out;
  EXPECT_TRUE(b.summary["origins"].empty()) << b.run.out;
  EXPECT_NE(b.run.out.find("another rank's"), std::string::npos) << b.run.out;

  // The same with --ranks, each rank in a process of its own: rank 0 as
  // above, rank 1 names the wrong kernel.
  TempDir out_r0, out_r1, out_none;
  Analysis c = analyze({"compare", "--ranks", "0", reference(), dut.path()}, out_r0.path());
  EXPECT_EQ(c.run.exit_code, 1) << c.run.out;
  EXPECT_EQ(c.summary["first_divergence"]["op"], "c10d::allreduce_") << c.run.out;
  EXPECT_EQ(c.summary["first_divergence"]["rank"], 0);
  EXPECT_EQ(c.summary["first_divergence"]["from_other_ranks"], true) << c.run.out;
  EXPECT_EQ(c.run.out.find("rank 1"), std::string::npos) << c.run.out;
  Analysis d = analyze({"compare", "--ranks", "1", reference(), dut.path()}, out_r1.path());
  EXPECT_EQ(d.run.exit_code, 1) << d.run.out;
  EXPECT_EQ(d.summary["first_divergence"]["op"], "aten::gelu") << d.run.out;
  EXPECT_EQ(d.summary["first_divergence"]["rank"], 1);
  EXPECT_EQ(d.summary["first_divergence"]["origin"], true);
  // merge joins the two into what one comparison of both ranks says, in the
  // other order too; its report.csv is that comparison's, row for row.
  for (const std::vector<std::string>& outs : {std::vector<std::string>{out_r0.path(), out_r1.path()},
                                               std::vector<std::string>{out_r1.path(), out_r0.path()}}) {
    TempDir merged;
    std::vector<std::string> args = {"merge"};
    args.insert(args.end(), outs.begin(), outs.end());
    Analysis m = analyze(args, merged.path());
    EXPECT_EQ(m.run.exit_code, a.run.exit_code) << m.run.out << m.run.err;
    for (const char* key : {"first_divergence", "origins", "ending", "divergence", "modules", "steps"}) {
      EXPECT_EQ(m.summary[key], a.summary[key]) << key;
    }
    // The counts, but for what each process measured of itself.
    auto verdicts = [](nlohmann::json counts) {
      for (const char* own : {"peak_held_bytes", "peak_memory_bytes", "seconds"}) counts.erase(own);
      counts["tensor_pairs"].erase("reused");
      return counts;
    };
    EXPECT_EQ(verdicts(m.summary["counts"]), verdicts(a.summary["counts"]));
    EXPECT_EQ(readFile(merged / "report.csv"), readFile(out.path() + "/report.csv"));
    EXPECT_NE(m.run.out.find("DIVERGENCE, first origin:"), std::string::npos) << m.run.out;
    EXPECT_NE(m.run.out.find("rank 1"), std::string::npos) << m.run.out;
  }
  // A rank in two of them, a directory compare did not write, and
  // comparisons judged otherwise: said, status 2.
  TempDir twice, strict, merged;
  Analysis dup = analyze({"merge", out_r0.path(), out_r0.path()}, twice.path());
  EXPECT_EQ(dup.run.exit_code, 2);
  EXPECT_NE(dup.run.err.find("rank 0 is in both " + out_r0.path() + " and " + out_r0.path()), std::string::npos)
      << dup.run.err;
  Analysis none = analyze({"merge", reference()}, merged.path());
  EXPECT_EQ(none.run.exit_code, 2);
  EXPECT_NE(none.run.err.find("no saved comparison (result.json)"), std::string::npos) << none.run.err;
  analyze({"compare", "--ranks", "1", "--fail-rel-l2", "1e-3", reference(), dut.path()}, strict.path());
  Analysis other = analyze({"merge", out_r0.path(), strict.path()}, merged.path());
  EXPECT_EQ(other.run.exit_code, 2);
  EXPECT_NE(other.run.err.find("was compared with other thresholds or --op-list"), std::string::npos) << other.run.err;

  // A rank neither side holds, and a list that is not one: said, status 2.
  Analysis e = analyze({"compare", "--ranks", "0,5", reference(), dut.path()}, out_none.path());
  EXPECT_EQ(e.run.exit_code, 2);
  EXPECT_NE(e.run.err.find("--ranks: rank 5 is in neither recording (they hold ranks 0,1)"), std::string::npos)
      << e.run.err;
  for (const char* bad : {"x", "1-", "-1", "3-2", "0,,1"}) {
    Analysis f = analyze({"compare", "--ranks", bad, reference(), dut.path()}, out_none.path());
    EXPECT_EQ(f.run.exit_code, 2) << bad;
    EXPECT_NE(f.run.err.find("is not a list of ranks and ranges, e.g. 0,2,8-15"), std::string::npos) << f.run.err;
  }
}

TEST(Ranks, ARankRecordedOnOneSideOnlyIsReported) {
  TempDir one, out;
  fs::copy(reference() + "/rank0", one / "rank0", fs::copy_options::recursive);
  Analysis a = analyze({"compare", reference(), one.path()}, out.path());
  EXPECT_EQ(a.run.exit_code, 0) << a.run.out << a.run.err;
  bool noted = false;
  for (const auto& note : a.summary["notes"]) noted = noted || note.get<std::string>().find("rank 1") == 0;
  EXPECT_TRUE(noted) << a.summary["notes"].dump();
}

}  // namespace
}  // namespace acc::test
