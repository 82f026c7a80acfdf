// acc-analyzer compare on real recordings of tests/scripts/gelu_mlp.py
// (Linear -> GELU -> Linear, 2 SGD steps): does it find the op that was made
// wrong, and only that one?
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "analyzer/report/columns.h"
#include "format/frame.h"
#include "tests/compare/recordings.h"

namespace acc::test {
namespace {
namespace fs = std::filesystem;

using Row = std::map<std::string, std::string>;

std::vector<std::vector<std::string>> parseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') cell += '"', ++i;
      else if (c == '"') quoted = false;
      else cell += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(cell);
      cell.clear();
    } else if (c == '\n') {
      rows.back().push_back(cell);
      cell.clear();
      rows.emplace_back();
    } else {
      cell += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

struct Outcome {
  RunResult run;
  nlohmann::json summary;
  std::vector<std::string> header;
  std::vector<Row> rows;
};

Outcome compare(const std::string& dir0, const std::string& dir1, const std::string& out,
                std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"compare", dir0, dir1, "-o", out};
  args.insert(args.end(), extra.begin(), extra.end());
  Outcome o;
  o.run = analyzer(args);
  if (exists(out + "/summary.json")) o.summary = nlohmann::json::parse(readFile(out + "/summary.json"));
  if (exists(out + "/report.csv")) {
    auto csv = parseCsv(readFile(out + "/report.csv"));
    if (!csv.empty()) {
      o.header = csv[0];
      for (size_t i = 1; i < csv.size(); ++i) {
        Row row;
        for (size_t k = 0; k < o.header.size() && k < csv[i].size(); ++k) row[o.header[k]] = csv[i][k];
        o.rows.push_back(row);
      }
    }
  }
  return o;
}

std::string firstNamed(const std::string& dir, const std::string& prefix, const std::string& suffix) {
  Recording rec = readRank(dir + "/rank0");
  for (const auto& r : rec.records) {
    if (r.name.rfind(prefix, 0) == 0 && r.name.size() >= suffix.size() &&
        r.name.compare(r.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return r.name;
    }
  }
  return "";
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

TEST(CompareE2E, WrongForwardKernelIsTheFirstOrigin) {
  TempDir out;
  const std::string ref = recording(Variant::Reference);
  Outcome o = compare(ref, recording(Variant::WrongForward), out.path());
  EXPECT_EQ(o.run.exit_code, 1) << o.run.out << o.run.err;
  const std::string gelu = firstNamed(ref, "aten::gelu.", ".fwd");
  ASSERT_FALSE(gelu.empty());
  const nlohmann::json& first = o.summary["first_divergence"];
  ASSERT_TRUE(first.is_object()) << o.summary.dump(2);
  EXPECT_EQ(first["name"], gelu);
  EXPECT_EQ(first["pass"], "fwd");
  EXPECT_EQ(first["origin"], true);
  EXPECT_EQ(first["step"], 0);
  EXPECT_EQ(first["rank"], 0);
  EXPECT_EQ(first["input_error"], 0.0);
  EXPECT_GT(first["output_error"].get<double>(), 5e-4);
  ASSERT_FALSE(o.summary["origins"].empty());
  EXPECT_EQ(o.summary["origins"][0]["name"], gelu);
  // Every origin is a gelu forward (one per step): inherited error is not blamed.
  for (const auto& origin : o.summary["origins"]) {
    EXPECT_EQ(origin["op"], "aten::gelu") << origin.dump();
    EXPECT_EQ(origin["pass"], "fwd") << origin.dump();
  }
  // Its module (the Sequential's second child), and the per-module summary
  // names that module as the first to fail.
  EXPECT_EQ(first["module"], "1") << first.dump(2);
  ASSERT_FALSE(o.summary["modules"].empty()) << o.summary.dump(2);
  EXPECT_EQ(o.summary["modules"][0]["module"], "1") << o.summary["modules"].dump(2);
  EXPECT_EQ(o.summary["modules"][0]["first_failing"]["name"], gelu) << o.summary["modules"].dump(2);
  EXPECT_GT(o.summary["modules"][0]["worst_error"].get<double>(), 5e-4);
  EXPECT_NE(o.run.out.find("modules with failing records, first failure first: 1 ("), std::string::npos) << o.run.out;
  EXPECT_NE(readFile(out / "report.html").find("<section id=\"modules\">"), std::string::npos);
  // Where the user called it, from the reference's Python stack.
  EXPECT_NE(first["location"].get<std::string>().find("gelu_mlp.py:"), std::string::npos) << first.dump(2);
  EXPECT_FALSE(first["stack"].empty());
  // The terminal names it too, with the report paths.
  EXPECT_NE(o.run.out.find("first origin"), std::string::npos) << o.run.out;
  EXPECT_NE(o.run.out.find(gelu), std::string::npos) << o.run.out;
  EXPECT_NE(o.run.out.find(out.path() + "/report.csv"), std::string::npos) << o.run.out;
  for (const char* f : {"summary.json", "report.csv", "report.xlsx", "report.html"}) {
    EXPECT_TRUE(exists(out / f)) << f;
  }
}

TEST(CompareE2E, WrongBackwardKernelIsTheFirstOrigin) {
  TempDir out;
  const std::string ref = recording(Variant::Reference);
  Outcome o = compare(ref, recording(Variant::WrongBackward), out.path());
  EXPECT_EQ(o.run.exit_code, 1) << o.run.out << o.run.err;
  const std::string gelu = firstNamed(ref, "aten::gelu.", ".fwd");
  ASSERT_FALSE(gelu.empty());
  const std::string gelu_bwd = gelu.substr(0, gelu.size() - 4) + ".bwd";
  const nlohmann::json& first = o.summary["first_divergence"];
  ASSERT_TRUE(first.is_object()) << o.summary.dump(2);
  EXPECT_EQ(first["name"], gelu_bwd);
  EXPECT_EQ(first["pass"], "bwd");
  EXPECT_EQ(first["origin"], true);
  EXPECT_EQ(first["grad_fn"], "GeluBackward0");
  for (const auto& origin : o.summary["origins"]) {
    EXPECT_EQ(origin["op"], "aten::gelu") << origin.dump();
    EXPECT_EQ(origin["pass"], "bwd") << origin.dump();
  }
  // Everything before it (the forward pass of step 0 and the backward
  // records before gelu's) is untouched.
  const uint64_t origin_index = first["index0"].get<uint64_t>();
  size_t before = 0;
  for (const Row& r : o.rows) {
    if (std::stoull(r.at("index")) >= origin_index) continue;
    EXPECT_EQ(r.at("verdict"), "pass") << r.at("name");
    ++before;
  }
  EXPECT_GT(before, 30u);
}

TEST(CompareE2E, Float64AgainstFloat32HasNoFalseOrigin) {
  TempDir out;
  Outcome o = compare(recording(Variant::Float64), recording(Variant::Reference), out.path());
  EXPECT_EQ(o.run.exit_code, 0) << o.run.out << o.run.err;
  EXPECT_TRUE(o.summary["origins"].empty()) << o.summary["origins"].dump(2);
  EXPECT_TRUE(o.summary["first_divergence"].is_null());
  EXPECT_EQ(o.summary["counts"]["records"]["fail"], 0);
  EXPECT_EQ(o.summary["counts"]["unmatched0"], 0);
  EXPECT_EQ(o.summary["counts"]["unmatched1"], 0);
  // Compared across dtypes, and reported as such.
  size_t cross = 0;
  for (const Row& r : o.rows) {
    if (r.at("dtype0") == "float64" && r.at("dtype1") == "float32" && !r.at("rel_l2").empty()) {
      ++cross;
      EXPECT_NE(r.at("mismatch").find("dtype float64 vs float32"), std::string::npos);
    }
  }
  EXPECT_GT(cross, 20u);
}

TEST(CompareE2E, IdenticalRunsPass) {
  TempDir out;
  Outcome o = compare(recording(Variant::Reference), recording(Variant::ReferenceAgain), out.path());
  EXPECT_EQ(o.run.exit_code, 0) << o.run.out << o.run.err;
  EXPECT_NE(o.run.out.find("no divergence"), std::string::npos) << o.run.out;
  EXPECT_EQ(o.summary["counts"]["records"]["fail"], 0);
  EXPECT_EQ(o.summary["counts"]["records"]["warn"], 0);
  EXPECT_EQ(o.summary["counts"]["records"]["pass"], o.summary["counts"]["matched"]);
  EXPECT_EQ(o.summary["counts"]["records0"], o.summary["counts"]["matched"]);
  ASSERT_FALSE(o.rows.empty());
  for (const Row& r : o.rows) EXPECT_EQ(r.at("verdict"), "pass") << r.at("name");
}

// Copies one rank of a recording into dir/rank{rank}, as that rank.
void addRank(const std::string& recording_dir, const std::string& dir, int rank) {
  const std::string to = dir + "/rank" + std::to_string(rank);
  fs::create_directories(dir);
  fs::copy(recording_dir + "/rank0", to, fs::copy_options::recursive);
  nlohmann::json manifest = nlohmann::json::parse(readFile(to + "/manifest.json"));
  manifest["rank"] = rank;
  std::ofstream(to + "/manifest.json") << manifest.dump(2);
}

TEST(CompareE2E, RanksAreComparedRankByRank) {
  TempDir work, out;
  const std::string ref = recording(Variant::Reference), again = recording(Variant::ReferenceAgain),
                    wrong = recording(Variant::WrongForward);
  addRank(ref, work / "dir0", 0);
  addRank(again, work / "dir0", 1);
  addRank(ref, work / "dir0", 2);  // only in DIR0
  addRank(again, work / "dir1", 0);
  addRank(wrong, work / "dir1", 1);
  Outcome o = compare(work / "dir0", work / "dir1", out.path());
  EXPECT_EQ(o.run.exit_code, 1) << o.run.out << o.run.err;
  const nlohmann::json& first = o.summary["first_divergence"];
  ASSERT_TRUE(first.is_object());
  EXPECT_EQ(first["rank"], 1);
  EXPECT_EQ(first["name"], firstNamed(ref, "aten::gelu.", ".fwd"));
  for (const auto& origin : o.summary["origins"]) EXPECT_EQ(origin["rank"], 1);
  for (const Row& r : o.rows) {
    if (r.at("rank") == "0") {
      EXPECT_EQ(r.at("verdict"), "pass") << r.at("name");
    }
  }
  // Rank 2 has no partner: its records are unmatched, and a note says why.
  const uint64_t per_rank = o.summary["counts"]["records1"].get<uint64_t>() / 2;
  EXPECT_EQ(o.summary["counts"]["unmatched0"], per_rank);
  EXPECT_EQ(o.summary["counts"]["matched"], 2 * per_rank);
  ASSERT_FALSE(o.summary["notes"].empty());
  EXPECT_NE(o.summary["notes"][0].get<std::string>().find("rank 2"), std::string::npos);
}

TEST(CompareE2E, ReportCsvHasTheSharedColumnsInExecutionOrder) {
  TempDir out;
  Outcome o = compare(recording(Variant::Reference), recording(Variant::WrongForward), out.path());
  std::vector<std::string> expected;
  for (const auto& c : analyzer::reportColumns()) expected.push_back(c.name);
  EXPECT_EQ(o.header, expected);
  const std::vector<std::string> required = {
      "index", "name", "op", "module", "pass", "step", "rank", "role", "position", "item", "dtype0", "dtype1", "shape0",
      "shape1", "cosine", "max_abs", "max_rel", "mean_abs", "rmse", "rel_l2", "within_1e3", "within_5e3",
      "sign_agree", "max_ulp", "nan_mismatch", "inf_mismatch", "verdict", "origin", "replay", "mismatch"};
  EXPECT_EQ(o.header, required);
  ASSERT_FALSE(o.rows.empty());
  uint64_t last = 0, pairs = 0;
  for (const Row& r : o.rows) {
    // gelu_mlp.py's Sequential: its children are 0, 1 and 2; the loss and
    // the optimizer run outside it.
    EXPECT_TRUE(r.at("module").empty() || r.at("module") == "0" || r.at("module") == "1" || r.at("module") == "2")
        << r.at("name") << " in " << r.at("module");
    if (r.at("op") == "aten::gelu") {
      EXPECT_EQ(r.at("module"), "1") << r.at("name");
    }
    uint64_t index = std::stoull(r.at("index"));
    EXPECT_GE(index, last);
    last = index;
    ++pairs;
  }
  const auto& tp = o.summary["counts"]["tensor_pairs"];
  EXPECT_EQ(pairs, tp["compared"].get<uint64_t>() + tp["not_compared"].get<uint64_t>());
  size_t origin_rows = 0;
  for (const Row& r : o.rows) origin_rows += r.at("origin") == "yes";
  EXPECT_GT(origin_rows, 0u);
}

TEST(CompareE2E, JsonPrintsTheSummary) {
  TempDir out;
  Outcome o = compare(recording(Variant::Reference), recording(Variant::WrongForward), out.path(), {"--json"});
  EXPECT_EQ(o.run.exit_code, 1);
  nlohmann::json printed = nlohmann::json::parse(o.run.out);
  EXPECT_EQ(printed, o.summary);
  EXPECT_EQ(printed["exit_code"], 1);
  EXPECT_EQ(printed["divergence"], true);
}

TEST(CompareE2E, AnExtraOpIsUnmatchedAndTheRestAligned) {
  TempDir out;
  Outcome o = compare(recording(Variant::Reference), recording(Variant::ExtraOp), out.path());
  EXPECT_EQ(o.run.exit_code, 0) << o.run.out << o.run.err;
  EXPECT_EQ(o.summary["counts"]["unmatched0"], 0);
  ASSERT_EQ(o.summary["counts"]["unmatched1"], 1) << o.summary["unmatched"].dump(2);
  EXPECT_EQ(o.summary["unmatched"][0]["op"], "aten::clone");
  EXPECT_EQ(o.summary["unmatched"][0]["only_in"], "DIR1");
  EXPECT_EQ(o.summary["counts"]["matched"], o.summary["counts"]["records0"]);
  EXPECT_EQ(o.summary["counts"]["records"]["fail"], 0);
}

TEST(CompareE2E, Level1RecordingsCompareOnStatistics) {
  TempDir out, same;
  const std::string ref = recording(Variant::ReferenceLevel1);
  Outcome o = compare(ref, recording(Variant::WrongForwardLevel1), out.path());
  EXPECT_EQ(o.run.exit_code, 1) << o.run.out << o.run.err;
  const nlohmann::json& first = o.summary["first_divergence"];
  ASSERT_TRUE(first.is_object());
  EXPECT_EQ(first["name"], firstNamed(ref, "aten::gelu.", ".fwd"));
  EXPECT_EQ(first["origin"], true);
  bool any = false;
  for (const auto& t : first["tensors"]) {
    if (t["compared"] == true) {
      EXPECT_EQ(t["level"], 1);
      if (t["checksum_equal"] == true) {
        EXPECT_EQ(t["role"], "input");  // gelu's input is bit-identical
        EXPECT_EQ(t["cosine"], 1.0);
      } else {
        EXPECT_EQ(t["role"], "output");
        EXPECT_TRUE(t["cosine"].is_null());  // unknown from statistics
        EXPECT_GT(t["rel_l2"].get<double>(), 1e-4);
        any = true;
      }
    }
  }
  EXPECT_TRUE(any);
  // Statistics-only metrics are empty cells, the rest filled.
  for (const Row& r : o.rows) {
    if (r.at("name") == first["name"].get<std::string>() && r.at("role") == "output") {
      EXPECT_EQ(r.at("cosine"), "");
      EXPECT_NE(r.at("rel_l2"), "");
    }
  }
  // Level 2 against level 1 of identical runs: statistics, checksums equal.
  Outcome s = compare(recording(Variant::Reference), ref, same.path());
  EXPECT_EQ(s.run.exit_code, 0) << s.run.out << s.run.err;
  EXPECT_EQ(s.summary["counts"]["records"]["fail"], 0);
}

TEST(CompareE2E, OpListComparesOnlyThoseOps) {
  TempDir out;
  Outcome o = compare(recording(Variant::Reference), recording(Variant::WrongForward), out.path(),
                      {"--op-list", "GELU"});
  EXPECT_EQ(o.run.exit_code, 1);
  ASSERT_FALSE(o.rows.empty());
  for (const Row& r : o.rows) EXPECT_NE(lower(r.at("op")).find("gelu"), std::string::npos) << r.at("op");
  EXPECT_EQ(o.summary["origins"][0]["op"], "aten::gelu");
}

TEST(CompareE2E, MinCosineListsThePairsBelow) {
  TempDir all_dir, low_dir;
  const std::string a = recording(Variant::Reference), b = recording(Variant::WrongForward);
  Outcome all = compare(a, b, all_dir.path());
  Outcome low = compare(a, b, low_dir.path(), {"--min-cosine", "0.9999999"});
  size_t expected = 0;
  for (const Row& r : all.rows) {
    if (!r.at("cosine").empty() && std::stod(r.at("cosine")) < 0.9999999 &&
        r.at("mismatch").find("uninitialized") == std::string::npos) {
      ++expected;
    }
  }
  ASSERT_GT(expected, 0u);
  EXPECT_LT(expected, all.rows.size());
  EXPECT_EQ(low.rows.size(), expected);
  for (const Row& r : low.rows) EXPECT_LT(std::stod(r.at("cosine")), 0.9999999);
  EXPECT_NE(low.run.out.find(std::to_string(expected) + " tensor pair(s) with cosine < 0.9999999:"), std::string::npos)
      << low.run.out;
  // The summary still counts everything (time, memory and the pairs that
  // found an earlier pair of the same contents finished depend on the run).
  nlohmann::json low_counts = low.summary["counts"], all_counts = all.summary["counts"];
  for (const char* key : {"seconds", "peak_held_bytes", "peak_memory_bytes"}) {
    low_counts.erase(key);
    all_counts.erase(key);
  }
  low_counts["tensor_pairs"].erase("reused");
  all_counts["tensor_pairs"].erase("reused");
  EXPECT_EQ(low_counts, all_counts);
  EXPECT_EQ(low.run.exit_code, 1);
}

TEST(CompareE2E, OnlyFailedReportsFailingRows) {
  TempDir all_dir, failed_dir;
  const std::string a = recording(Variant::Reference), b = recording(Variant::WrongForward);
  Outcome all = compare(a, b, all_dir.path());
  Outcome failed = compare(a, b, failed_dir.path(), {"--only-failed"});
  size_t expected = 0;
  for (const Row& r : all.rows) expected += r.at("verdict") == "fail";
  ASSERT_GT(expected, 0u);
  EXPECT_EQ(failed.rows.size(), expected);
  for (const Row& r : failed.rows) EXPECT_EQ(r.at("verdict"), "fail");
  EXPECT_FALSE(failed.summary["filters"].empty());
}

TEST(CompareE2E, ThresholdsCanBeOverridden) {
  TempDir out;
  // The wrong kernel's 1e-3 error passes a 1e-2 limit (it still warns).
  Outcome o = compare(recording(Variant::Reference), recording(Variant::WrongForward), out.path(),
                      {"--fail-rel-l2", "fp32=1e-2", "--fail-cosine=0.99"});
  EXPECT_EQ(o.run.exit_code, 0) << o.run.out;
  EXPECT_GT(o.summary["counts"]["records"]["warn"].get<int>(), 0);
  EXPECT_EQ(o.summary["thresholds"]["fp32"]["rel_l2_fail"], 1e-2);
  EXPECT_EQ(o.summary["thresholds"]["bf16"]["rel_l2_fail"], 4e-2);
  // A bad value is a usage error.
  EXPECT_EQ(analyzer({"compare", "a", "b", "--fail-rel-l2", "fp33=1"}).exit_code, 2);
}

TEST(CompareE2E, FewThreadsAndLittleMemoryGiveTheSameResult) {
  TempDir a_dir, b_dir;
  const std::string a = recording(Variant::Reference), b = recording(Variant::WrongForward);
  Outcome one = compare(a, b, a_dir.path(), {"--threads", "1"});
  Outcome many = compare(a, b, b_dir.path(), {"--threads", "5", "--memory-mb", "1"});
  EXPECT_EQ(readFile(a_dir / "report.csv"), readFile(b_dir / "report.csv"));
  EXPECT_EQ(one.summary["origins"], many.summary["origins"]);
}

// Offset of the middle of the first frame with `magic` in a records file
// (format v2: level-2 files start with data frames).
size_t insideFirstFrame(const std::string& file, uint32_t magic) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  for (size_t at = format::kFileHeaderSize; at + format::kFrameHeaderSize <= bytes.size();) {
    uint32_t m, csize;
    std::memcpy(&m, bytes.data() + at, 4);
    std::memcpy(&csize, bytes.data() + at + 4, 4);
    const size_t header = format::isDataFrameMagic(m) ? format::kDataFrameHeaderSize : format::kFrameHeaderSize;
    if (m == magic) return at + header + csize / 2;
    at += header + csize;
  }
  ADD_FAILURE() << file << " has no frame with magic " << magic;
  return 0;
}

void damage(const std::string& file, size_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  const char junk[8] = {'\x55', '\x55', '\x55', '\x55', '\x55', '\x55', '\x55', '\x55'};
  f.write(junk, sizeof junk);
}

// Two runs of a chain of sin() on 4 MiB tensors: several 1 MiB data frames
// per tensor, decompressed by the workers in parallel.
void recordBigTensors(const TempDir& work) {
  const std::string script = work / "big.py";
  std::ofstream(script) << "import torch\n"
                           "torch.manual_seed(0)\n"
                           "x = torch.randn(1 << 20)\n"
                           "for _ in range(12):\n"
                           "    x = torch.sin(x)\n";
  for (const char* run : {"a", "b"}) {
    RunResult r = recordPython(script, work / run, {{"ACC_LEVEL", "2"}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
}

// Records are held in memory only until compared: the budget, plus the
// record each of the two readers is handing over.
TEST(CompareE2E, MemoryBudgetBoundsTheDataHeld) {
  TempDir work, out;
  recordBigTensors(work);
  Outcome o = compare(work / "a", work / "b", out.path(), {"--memory-mb", "10"});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  const uint64_t record = 2 * (4u << 20) + 1024;  // input and output of one sin
  EXPECT_GT(o.summary["counts"]["bytes_compared"].get<uint64_t>(), 90u << 20);
  EXPECT_LE(o.summary["counts"]["peak_held_bytes"].get<uint64_t>(), (10u << 20) + 2 * record);
  EXPECT_GE(o.summary["counts"]["peak_held_bytes"].get<uint64_t>(), 2 * (8u << 20));  // a pair at least
}

// A data frame inside a large tensor fails its checksum while the workers
// decompress it: that tensor alone falls back to its statistics.
TEST(CompareE2E, CorruptFrameInsideALargeTensorCostsOnlyThatTensor) {
  TempDir work, out;
  recordBigTensors(work);
  const std::string file = work / "b/rank0/records.acc";
  damage(file, insideFirstFrame(file, format::kShuffledDataFrameMagic));
  Outcome o = compare(work / "a", work / "b", out.path());
  EXPECT_EQ(o.run.exit_code, 2) << o.run.out << o.run.err;
  EXPECT_NE(o.run.err.find("1 tensor(s) without their data (compared on statistics)"), std::string::npos)
      << o.run.err;
  ASSERT_TRUE(o.summary.is_object());
  EXPECT_EQ(o.summary["counts"]["unmatched1"], 0);
  EXPECT_EQ(o.summary["counts"]["records"]["fail"], 0) << o.summary.dump();
  // Every other tensor was compared element by element: 12 sin records of
  // two 4 MiB tensors, plus randn's output, less the damaged one.
  EXPECT_EQ(o.summary["counts"]["bytes_compared"].get<uint64_t>(), 2 * (24u * (4u << 20)));
}

TEST(CompareE2E, MissingDirectoryIsAnInputError) {
  TempDir out;
  RunResult r = analyzer({"compare", recording(Variant::Reference), out / "nowhere", "-o", out / "o"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nowhere: no such file or directory"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(CompareE2E, TruncatedRecordsFileIsReportedAndTheRestCompared) {
  TempDir work, out;
  fs::copy(recording(Variant::WrongForward), work / "damaged", fs::copy_options::recursive);
  const std::string file = work / "damaged/rank0/records.acc";
  const auto size = fs::file_size(file);
  fs::resize_file(file, size - 100);  // the last frame loses its end
  Outcome o = compare(recording(Variant::Reference), work / "damaged", out.path());
  EXPECT_EQ(o.run.exit_code, 2) << o.run.out << o.run.err;
  EXPECT_NE(o.run.err.find("incomplete frame"), std::string::npos) << o.run.err;
  EXPECT_EQ(std::count(o.run.err.begin(), o.run.err.end(), '\n'), 1) << o.run.err;
  ASSERT_TRUE(o.summary.is_object());
  EXPECT_EQ(o.summary["exit_code"], 2);
  EXPECT_FALSE(o.summary["problems"].empty());
  EXPECT_GT(o.summary["counts"]["matched"].get<int>(), 0);
  EXPECT_GT(o.summary["counts"]["unmatched0"].get<int>(), 0);
}

TEST(CompareE2E, CorruptFrameIsReportedAndTheRestCompared) {
  TempDir work, out;
  fs::copy(recording(Variant::WrongForward), work / "damaged", fs::copy_options::recursive);
  const std::string file = work / "damaged/rank0/records.acc";
  damage(file, insideFirstFrame(file, format::kFrameMagic));
  Outcome o = compare(recording(Variant::Reference), work / "damaged", out.path());
  EXPECT_EQ(o.run.exit_code, 2) << o.run.out << o.run.err;
  EXPECT_NE(o.run.err.find("corrupt frame"), std::string::npos) << o.run.err;
  ASSERT_TRUE(o.summary.is_object());
  EXPECT_GT(o.summary["counts"]["matched"].get<int>(), 0);
  EXPECT_GT(o.summary["counts"]["unmatched0"].get<int>(), 0);
}

// A damaged data frame costs only the bytes in it: the records it held data
// for are still matched and compared on their statistics.
TEST(CompareE2E, CorruptDataFrameFallsBackToStatistics) {
  TempDir work, out;
  fs::copy(recording(Variant::Reference), work / "damaged", fs::copy_options::recursive);
  const std::string file = work / "damaged/rank0/records.acc";
  damage(file, insideFirstFrame(file, format::kShuffledDataFrameMagic));
  Outcome o = compare(recording(Variant::Reference), work / "damaged", out.path());
  EXPECT_EQ(o.run.exit_code, 2) << o.run.out << o.run.err;
  EXPECT_NE(o.run.err.find("without their data (compared on statistics)"), std::string::npos) << o.run.err;
  ASSERT_TRUE(o.summary.is_object());
  EXPECT_EQ(o.summary["counts"]["unmatched0"].get<int>(), 0);
  EXPECT_EQ(o.summary["counts"]["unmatched1"].get<int>(), 0);
  EXPECT_EQ(o.summary["counts"]["records"]["fail"], 0) << o.summary.dump();
  EXPECT_TRUE(o.summary["first_divergence"].is_null()) << o.summary.dump();
}

// A side none of whose records can be read compared nothing: an input
// error naming it, not a verdict ("no divergence: 0 records compared").
TEST(CompareE2E, NoReadableRecordOnOneSideIsAnInputErrorNotAVerdict) {
  TempDir work, out;
  fs::copy(recording(Variant::Reference), work / "unreadable", fs::copy_options::recursive);
  const std::string file = work / "unreadable/rank0/records.acc";
  {
    // The file header stays; every frame after it is noise.
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(format::kFileHeaderSize));
    const std::string noise(fs::file_size(file) - format::kFileHeaderSize, '\x5a');
    f.write(noise.data(), static_cast<std::streamsize>(noise.size()));
  }
  RunResult r = analyzer({"compare", recording(Variant::Reference), work / "unreadable", "-o", out / "o"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(work / "unreadable (DIR1): no record could be read, so nothing was compared"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("no divergence"), std::string::npos) << r.err;
}

// manifest.json is the user's file: fields of the wrong type read as
// absent (the fuzzer's first find threw out of list), and a manifest that
// is not an object is an input error naming it.
TEST(CompareE2E, AManifestOfTheWrongShapeIsReadOrNamed) {
  TempDir work;
  fs::copy(recording(Variant::Reference), work / "odd", fs::copy_options::recursive);
  const std::string manifest = work / "odd/rank0/manifest.json";
  std::ofstream(manifest) << R"({"status": 3, "torch_version": [], "config": "x", "counts": [1], "watch": 1,
                               "signal": "SIGTERM", "rank": "zero", "format_version": {"v": 7}})";
  RunResult list = analyzer({"list", work / "odd"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("rank 0  " + work / "odd/rank0" + "  torch ?  level ?  format {\"v\":7}"), std::string::npos)
      << list.out.substr(0, 300);
  EXPECT_NE(list.out.find("aten::gelu"), std::string::npos);
  std::ofstream(manifest) << "[1, 2]";
  for (const char* command : {"list", "compare"}) {
    RunResult r = command == std::string("list") ? analyzer({"list", work / "odd"})
                                                 : analyzer({"compare", work / "odd", work / "odd", "-o", work / "o"});
    EXPECT_EQ(r.exit_code, 2) << command << r.err;
    EXPECT_NE(r.err.find(manifest + ": not a JSON object"), std::string::npos) << command << r.err;
  }
}

TEST(CompareE2E, UsageErrors) {
  EXPECT_EQ(analyzer({"compare"}).exit_code, 2);
  EXPECT_EQ(analyzer({"compare", "a"}).exit_code, 2);
  EXPECT_EQ(analyzer({"compare", "a", "b", "--bogus"}).exit_code, 2);
  EXPECT_EQ(analyzer({"compare", "a", "b", "--min-cosine", "x"}).exit_code, 2);
  RunResult help = analyzer({"compare", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("usage: acc-analyzer compare DIR0 DIR1"), std::string::npos);
  EXPECT_NE(help.out.find("Exit codes"), std::string::npos);
  EXPECT_NE(analyzer({"--help"}).out.find("compare DIR0 DIR1"), std::string::npos);
}

// Options with values may come before the directories: each takes one word
// (they once took every word up to the next option, directories included).
TEST(CompareE2E, OptionsMayComeBeforeTheDirectories) {
  TempDir out;
  Analysis a = analyze({"compare", "--memory-mb", "64", "--op-list", "gelu", "--threads", "1", "--ranks", "0",
                        recording(Variant::Reference), recording(Variant::WrongForward)},
                       out.path());
  EXPECT_EQ(a.run.exit_code, 1) << a.run.err;
  EXPECT_EQ(a.summary["first_divergence"]["op"], "aten::gelu") << a.run.out;
  TempDir checked;
  RunResult c = analyzer({"check", "--op-list", "gelu", recording(Variant::Reference), "-o", checked.path()});
  EXPECT_NE(c.exit_code, 2) << c.err;
}

}  // namespace
}  // namespace acc::test
