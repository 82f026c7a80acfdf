// Each tensor content recorded once (ACC_DEDUP=1, the default) must read
// back exactly as a recording that captures every tensor whole
// (ACC_DEDUP=0): for in-place chains, views, .data writes, set_, and writes
// through data_ptr that no version counter sees; and level-2 data must be
// the bytes the program computed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <map>
#include <filesystem>
#include <set>
#include <string>

#include "analyzer/read/recording.h"
#include "tests/e2e/harness.h"

namespace acc::test {
namespace {

bool sameStats(const format::Stats& a, const format::Stats& b) {
  // Bit patterns: NaN statistics must match too.
  return std::memcmp(&a.min, &b.min, sizeof(double) * 4) == 0 && a.nan_count == b.nan_count &&
         a.inf_count == b.inf_count && a.checksum == b.checksum;
}

// Every record and tensor of `deduplicated` equals its twin in `whole`;
// returns how many tensors referred to an earlier content.
uint64_t expectSameRecords(const Recording& whole, const Recording& deduplicated, bool data) {
  EXPECT_FALSE(whole.damaged);
  EXPECT_FALSE(deduplicated.damaged);
  EXPECT_EQ(whole.names(), deduplicated.names());
  std::set<uint64_t> seen;
  uint64_t refs = 0;
  const size_t n = std::min(whole.records.size(), deduplicated.records.size());
  for (size_t i = 0; i < n; ++i) {
    const format::OpRecord& a = whole.records[i];
    const format::OpRecord& b = deduplicated.records[i];
    EXPECT_EQ(a.tensors.size(), b.tensors.size()) << a.name;
    for (size_t k = 0; k < std::min(a.tensors.size(), b.tensors.size()); ++k) {
      const format::Tensor& ta = a.tensors[k];
      const format::Tensor& tb = b.tensors[k];
      const std::string where = a.name + " tensor " + std::to_string(k);
      EXPECT_EQ(ta.content, 0u) << where;
      EXPECT_EQ(ta.has_stats, tb.has_stats) << where;
      if (ta.has_stats && tb.has_stats) {
        EXPECT_TRUE(sameStats(ta.stats, tb.stats)) << where;
      }
      if (data) {
        EXPECT_EQ(ta.has_data, tb.has_data) << where;
        EXPECT_TRUE(ta.data == tb.data) << where << ": data differ";
      }
      if (tb.content != 0 && !seen.insert(tb.content).second) ++refs;
    }
  }
  return refs;
}

struct Pair {
  Recording whole, deduplicated;
};

// The two recordings come from two runs, which must compute the same bits:
// one intra-op thread each, as BLAS builds such as MKL may otherwise split
// work differently from run to run (two of these tests failed with pip's
// torch 2.11 on 16 cores; the cause was not confirmed).
std::map<std::string, std::string> oneThread(std::map<std::string, std::string> env) {
  env["OMP_NUM_THREADS"] = "1";
  env["MKL_NUM_THREADS"] = "1";
  return env;
}

Pair recordBoth(const TempDir& dir, const std::string& script, std::map<std::string, std::string> env) {
  Pair p;
  env = oneThread(env);
  env["ACC_DEDUP"] = "0";
  RunResult r0 = recordPython(script, dir / "whole", env);
  EXPECT_EQ(r0.exit_code, 0) << r0.err;
  env["ACC_DEDUP"] = "1";
  RunResult r1 = recordPython(script, dir / "dedup", env);
  EXPECT_EQ(r1.exit_code, 0) << r1.err;
  EXPECT_EQ(lossLines(r0.out), lossLines(r1.out));
  p.whole = readRank(dir / "whole/rank0");
  p.deduplicated = readRank(dir / "dedup/rank0");
  return p;
}

TEST(DeduplicationTest, HiddenWritesReadBackAsWholeCapturesAtLevel2) {
  TempDir dir;
  const std::string saved = dir / "saved";
  std::filesystem::create_directories(saved);
  Pair p = recordBoth(dir, testScript("hidden_writes.py"), {{"ACC_LEVEL", "2"}, {"SAVE_DIR", saved}});
  EXPECT_GT(expectSameRecords(p.whole, p.deduplicated, true), 20u);
  // What each torch.neg read is what the program held, byte for byte.
  std::vector<const format::OpRecord*> reads = p.deduplicated.named("aten::neg.");
  ASSERT_EQ(reads.size(), 18u);
  for (size_t k = 0; k < reads.size(); ++k) {
    const format::Tensor& in = reads[k]->tensors.at(0);
    ASSERT_EQ(in.role, format::Role::Input);
    EXPECT_TRUE(in.has_data);
    EXPECT_TRUE(in.data == readFile(saved + "/read_" + std::to_string(k) + ".bin")) << "read " << k;
  }
  const nlohmann::json& contents = p.deduplicated.manifest["contents"];
  EXPECT_GT(contents["referenced"].get<uint64_t>(), 20u) << contents.dump();
  // The two data_ptr writes are caught by the sample, the .data and set_
  // aliases by their second version counter.
  EXPECT_GE(contents["sample_mismatches"].get<uint64_t>(), 2u) << contents.dump();
  EXPECT_GE(contents["aliased_storages"].get<uint64_t>(), 2u) << contents.dump();
  EXPECT_EQ(p.whole.manifest["contents"]["defined"], 0);
}

TEST(DeduplicationTest, HiddenWritesReadBackAsWholeCapturesAtLevel1) {
  TempDir dir;
  Pair p = recordBoth(dir, testScript("hidden_writes.py"), {{"ACC_LEVEL", "1"}});
  EXPECT_GT(expectSameRecords(p.whole, p.deduplicated, false), 10u);
}

// Op records in batches (recorder/write/record_batch.h), 64 a thread here,
// so that only a step's end and the program's end hand them over: two
// threads handing each other tensors read back as whole captures. A thread
// refers to a content another thread defined only once that thread's batch
// is queued (the step before's), never to one still in its batch (this
// step's), which would put a reference before its definition in the file.
TEST(DeduplicationTest, ThreadsReferToEachOthersContentsOnlyOnceQueued) {
  TempDir dir;
  Pair p = recordBoth(dir, testScript("two_threads.py"), {{"ACC_LEVEL", "1"}, {"ACC_RECORD_BATCH", "64"}});
  EXPECT_GT(expectSameRecords(p.whole, p.deduplicated, false), 10u);
  const Recording& rec = p.deduplicated;
  const std::vector<const format::OpRecord*> linear = rec.named("aten::linear.");
  ASSERT_FALSE(linear.empty());
  const uint64_t main_thread = linear[0]->thread;
  // The other thread's x.cos() + 1 and x.sin() of each step, and the main
  // thread's out * back (the first, this step's) + before (the second, the
  // step before's). The reader gives a reference the id it refers to.
  std::map<int64_t, const format::OpRecord*> side_add, side_sin, main_mul, main_add;
  for (const format::OpRecord& r : rec.records) {
    if (r.op == "aten::add" && r.thread != main_thread) side_add[r.step] = &r;
    if (r.op == "aten::sin" && r.thread != main_thread && r.step < 6) side_sin[r.step] = &r;
    if (r.op == "aten::mul" && r.thread == main_thread && r.pass == format::Pass::Forward) main_mul[r.step] = &r;
    if (r.op == "aten::add" && r.thread == main_thread && r.pass == format::Pass::Forward && r.tensors.size() == 3) {
      main_add[r.step] = &r;
    }
  }
  ASSERT_EQ(side_add.size(), 6u);
  ASSERT_EQ(side_sin.size(), 6u);
  for (int64_t step = 0; step < 6; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    ASSERT_TRUE(main_mul.count(step) && main_add.count(step));
    // Defined again: the other thread's batch was not queued yet.
    const uint64_t back = main_mul[step]->tensors.at(1).content;
    EXPECT_NE(back, 0u);
    EXPECT_NE(back, side_add[step]->tensors.back().content);
    if (step == 0) continue;
    // Queued at the step's end: referred to.
    EXPECT_EQ(main_add[step]->tensors.at(1).content, side_sin[step - 1]->tensors.back().content);
  }
  // The three ops of the thread left waiting at the end were handed over
  // at exit (full, sin, exp).
  size_t last = 0;
  for (const format::OpRecord& r : rec.records) last += r.thread != main_thread && r.step == 6;
  EXPECT_EQ(last, 3u);
  EXPECT_EQ(rec.named("aten::exp.").size(), 1u);
  // In the file, no record of the other thread comes after a main-thread
  // record of a later step: the analyzer takes a step once it has read
  // 4,096 records of later ones.
  auto ranks = analyzer::openRecording(dir / "dedup/rank0");
  analyzer::ReadOptions options;
  std::map<uint64_t, format::StackRecord> stacks;
  int64_t main_step = -1;
  size_t late = 0, read = 0;
  analyzer::readRecords(ranks.at(0), options, [&](format::OpRecord&& r) {
    ++read;
    if (r.thread == main_thread) {
      main_step = std::max(main_step, r.step);
    } else if (r.step < main_step) {
      ++late;
    }
  }, stacks);
  EXPECT_EQ(read, rec.records.size());
  EXPECT_EQ(late, 0u);
}

TEST(DeduplicationTest, AdamWChainsAreStoredOnce) {
  TempDir dir;
  Pair p = recordBoth(dir, example("transformer_train.py"), {{"ACC_LEVEL", "2"}, {"LM_STEPS", "2"}});
  const uint64_t refs = expectSameRecords(p.whole, p.deduplicated, true);
  uint64_t tensors = 0;
  for (const format::OpRecord& r : p.deduplicated.records) tensors += r.tensors.size();
  // Most tensors an op reads were an earlier op's output or input.
  EXPECT_GT(refs * 3, tensors) << refs << " references among " << tensors << " tensors";
  const uint64_t whole = p.whole.manifest["counts"]["bytes"].get<uint64_t>();
  const uint64_t dedup = p.deduplicated.manifest["counts"]["bytes"].get<uint64_t>();
  EXPECT_LT(dedup * 10, whole * 8) << dedup << " bytes deduplicated, " << whole << " whole";
  // AdamW's in-place updates are stored as deltas on what they overwrote
  // (format v8), and read back above as the values themselves: per step,
  // each parameter's decay and update at least.
  const nlohmann::json& contents = p.deduplicated.manifest["contents"];
  const uint64_t updates = p.deduplicated.named("aten::addcdiv_.").size();
  EXPECT_GT(updates, 20u);
  EXPECT_GE(contents["deltas"].get<uint64_t>(), 2 * updates) << contents.dump();
  EXPECT_EQ(p.whole.manifest["contents"]["deltas"], 0);
  // Mapped (format v9): the weight decay's and the second moment's mul_,
  // the denominator's sqrt, its division and its add_ of eps, per
  // parameter and step (the moments start at zero: fewer on the first).
  EXPECT_GE(contents["mapped_deltas"].get<uint64_t>(), 3 * updates) << contents.dump();
}

// Format v9: outputs recorded as their XOR with the op done again on their
// base (an in-place mul_ or add_ of a number, sqrt, a division or product
// by a number) read back as the values a recording without deltas holds:
// float32 and float64, NaNs the op makes, subnormals the program's kernel
// flushes; integers, bfloat16 and a rounding division are not mapped.
TEST(DeduplicationTest, MappedDeltasReadBackAsTheValues) {
  TempDir dir;
  Pair p = recordBoth(dir, testScript("mapped_deltas.py"), {{"ACC_LEVEL", "2"}});
  expectSameRecords(p.whole, p.deduplicated, true);
  const nlohmann::json& contents = p.deduplicated.manifest["contents"];
  EXPECT_EQ(contents["mapped_deltas"].get<uint64_t>(), 8u) << contents.dump();
  EXPECT_EQ(p.whole.manifest["contents"]["mapped_deltas"], 0);
  const std::vector<const format::OpRecord*> sqrts = p.deduplicated.named("aten::sqrt.");
  ASSERT_EQ(sqrts.size(), 2u);
  float first = 0;  // the values, not their XOR
  std::memcpy(&first, sqrts[0]->tensors.at(1).data.data(), sizeof first);
  EXPECT_GT(first, 0.7f);
  EXPECT_LT(first, 1.3f);
}

// compare reads each pair of contents once: two deduplicated recordings give
// the verdicts of two whole ones, with repeated pairs answered from the first.
TEST(DeduplicationTest, CompareComparesEachPairOfContentsOnce) {
  TempDir dir;
  const std::map<std::string, std::string> env = oneThread({{"ACC_LEVEL", "2"}, {"LM_STEPS", "2"}});
  for (const char* dedup : {"0", "1"}) {
    for (const char* run : {"a", "b"}) {
      std::map<std::string, std::string> e = env;
      e["ACC_DEDUP"] = dedup;
      RunResult r = recordPython(example("transformer_train.py"), dir / (std::string(run) + dedup), e);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
  }
  nlohmann::json summary[2];
  for (int dedup = 0; dedup < 2; ++dedup) {
    const std::string d = std::to_string(dedup);
    RunResult c = run({{binDir() + "/acc-analyzer", "compare", dir / ("a" + d), dir / ("b" + d), "-o",
                        dir / ("out" + d)},
                       {},
                       "",
                       false,
                       ""});
    EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
    summary[dedup] = nlohmann::json::parse(readFile(dir / ("out" + d) + "/summary.json"));
  }
  nlohmann::json whole = summary[0]["counts"]["tensor_pairs"], dedup = summary[1]["counts"]["tensor_pairs"];
  EXPECT_EQ(whole["reused"], 0);
  EXPECT_GT(dedup["reused"].get<uint64_t>(), 100u) << dedup.dump();
  for (const char* key : {"compared", "not_compared", "pass", "warn", "fail"}) {
    EXPECT_EQ(whole[key], dedup[key]) << key;
  }
}

// The least peak resident memory (KiB) of three runs each of resnet18 +
// AdamW (`env` added to its settings) unrecorded and recorded with
// `acc_env`, interleaved: one run's peak varies by up to 90 MiB either way
// (the unrecorded run's too, under a parallel test's load). Each run is
// the only child of a small Python program that prints its peak; acc,
// preloaded into both, records only the child (the parent never loads
// torch). `manifest`, if given, receives the last recording's manifest.
std::pair<double, double> leastPeaksKib(const std::map<std::string, std::string>& env,
                                        const std::map<std::string, std::string>& acc_env,
                                        nlohmann::json* manifest = nullptr) {
  const std::string wrapper =
      "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
      "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r.returncode)";
  std::map<std::string, std::string> base = {
      {"RESNET_STEPS", "8"}, {"RESNET_SIZE", "64"}, {"RESNET_OPTIM", "adamw"}, {"OMP_NUM_THREADS", "1"}};
  for (const auto& [k, v] : env) base[k] = v;
  auto peakKib = [&](bool recorded, const std::string& dir) {
    Command c;
    c.argv = {python(), "-c", wrapper, python(), example("resnet_train.py")};
    c.env = base;
    c.preload = recorded;
    if (recorded) {
      c.env.insert({{"ACC_OUTPUT_DIR", dir}});
      for (const auto& [k, v] : acc_env) c.env[k] = v;
    }
    RunResult r = run(c);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const size_t last = r.out.find_last_not_of("\n");
    const size_t start = r.out.find_last_of('\n', last);
    return std::stod(r.out.substr(start == std::string::npos ? 0 : start + 1));
  };
  double plain = 0, recorded = 0;
  for (int i = 0; i < 3; ++i) {
    TempDir dir;
    const double p = peakKib(false, ""), r = peakKib(true, dir.path());
    plain = i == 0 ? p : std::min(plain, p);
    recorded = i == 0 ? r : std::min(recorded, r);
    std::cerr << "peak resident memory: " << p / 1024 << " MiB unrecorded, " << r / 1024 << " MiB recorded\n";
    if (manifest != nullptr) *manifest = nlohmann::json::parse(readFile(dir.path() + "/rank0/manifest.json"));
  }
  return {plain, recorded};
}

// The store remembers contents by weak references, which keep dead
// TensorImpl and StorageImpl objects allocated until a sweep lets them go.
// Swept only every 4,096 records, those small objects pinned the heap
// between a program's tensors: resnet18 + AdamW peaked 208 MB (42 %) above
// its unrecorded run. Now they are let go within 64 records.
TEST(DeduplicationTest, RecordingKeepsTheProgramsPeakMemory) {
  const auto [plain, recorded] = leastPeaksKib({}, {{"ACC_LEVEL", "1"}});
  // Issue 26's target: at most 5 % or 64 MiB more, whichever is larger.
  EXPECT_LE(recorded, std::max(plain * 1.05, plain + 64 * 1024)) << plain << " KiB unrecorded";
}

// Level 2's tensor bytes wait for the writer in blocks of acc's own, at
// most ACC_BUFFER_MB of them but for the records being made
// (write/data_buffer.h). In the program's heap, among its tensors, the
// holes they left grew it: with the default 256 MiB budget, resnet18 +
// AdamW peaked about 420 MiB above its unrecorded run (bench/README.md,
// "Level-2 memory"). Now level 2 adds at most its budget, what level 1 may
// add (64 MiB) and an optimizer op's tensors in the making (40 MiB).
TEST(DeduplicationTest, Level2AddsAtMostItsBuffer) {
  nlohmann::json manifest;
  const auto [plain, recorded] =
      leastPeaksKib({{"RESNET_STEPS", "6"}}, {{"ACC_LEVEL", "2"}, {"ACC_BUFFER_MB", "256"}}, &manifest);
  EXPECT_LE(recorded, plain + (256 + 64 + 40) * 1024) << plain << " KiB unrecorded";
  // The blocks in use and kept: within the budget but for the records
  // being made (resnet18's largest tensors are 9 MiB).
  const uint64_t peak = manifest["data_buffers"]["peak_bytes"].get<uint64_t>();
  EXPECT_GT(peak, uint64_t{16} << 20) << manifest["data_buffers"].dump();
  EXPECT_LE(peak, uint64_t{256 + 40} << 20) << manifest["data_buffers"].dump();
  EXPECT_EQ(manifest["data_buffers"]["in_use_bytes"], 0);
  EXPECT_EQ(manifest["counts"]["dropped"], 0);
}

}  // namespace
}  // namespace acc::test
