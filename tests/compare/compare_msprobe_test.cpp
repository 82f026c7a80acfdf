// msprobe interop (analyzer/msprobe): recordings exported in msprobe's
// dump layout load in torch as msprobe's compare loads them; msprobe's own
// dumps (shared/fixtures/msprobe, statistics and tensor tasks) are read as
// recordings by every command and round-trip through export; compare on
// the fixture pair points at the multiplication only the run under test has.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "analyzer/msprobe/pt_file.h"
#include "analyzer/msprobe/torch_types.h"
#include "tests/compare/recordings.h"

namespace acc::test {
namespace {
namespace fs = std::filesystem;
using analyzer::msprobe::PtTensor;

std::string fixture(const std::string& name) { return testData("msprobe/" + name); }

RunResult checkDump(const std::string& dump, const std::string& same_as = "") {
  std::vector<std::string> argv = {python(), testScript("check_msprobe_dump.py"), dump};
  if (!same_as.empty()) argv.push_back(same_as);
  return run({argv, {}, "", false, ""});
}

nlohmann::json readJson(const std::string& path) { return nlohmann::json::parse(readFile(path)); }

TEST(Msprobe, ExportedRecordingsLoadInTorchAsTheirEntriesSay) {
  TempDir out;
  RunResult e = analyzer({"export", recording(Variant::Reference), "--format", "msprobe", "-o", out.path()});
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  EXPECT_NE(e.out.find("task tensor"), std::string::npos) << e.out;
  RunResult c = checkDump(out.path());
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("checked "), std::string::npos);
  for (const std::string step : {"step0", "step1"}) {
    const std::string leaf = out / (step + "/rank0");
    const nlohmann::json dump = readJson(leaf + "/dump.json");
    EXPECT_EQ(dump["task"], "tensor");
    EXPECT_EQ(dump["framework"], "pytorch");
    ASSERT_TRUE(dump["data"].contains("Aten.gelu.0.forward")) << step;
    const nlohmann::json& gelu = dump["data"]["Aten.gelu.0.forward"];
    EXPECT_EQ(gelu["input_args"][0]["type"], "torch.Tensor");
    EXPECT_EQ(gelu["input_args"][0]["dtype"], "torch.float32");
    EXPECT_EQ(gelu["input_args"][1], (nlohmann::json{{"type", "str"}, {"value", "none"}}));
    EXPECT_EQ(gelu["output"][0]["data_name"], "Aten.gelu.0.forward.output.0.pt");
    ASSERT_TRUE(dump["data"].contains("Aten.gelu.0.backward")) << step;
    EXPECT_TRUE(dump["data"]["Aten.gelu.0.backward"].contains("input"));
    // The recording's Python stacks, in msprobe's frames; every entry in
    // construct.json (graph_visualize refuses an empty one).
    const nlohmann::json stack = readJson(leaf + "/stack.json");
    ASSERT_FALSE(stack.empty());
    EXPECT_EQ(stack["0"][1][0].get<std::string>().rfind("File ", 0), 0u) << stack.dump();
    EXPECT_EQ(readJson(leaf + "/construct.json").size(), dump["data"].size());
  }
  // Read back by acc and exported again: the same entries, tensors and statistics.
  TempDir again;
  RunResult e2 = analyzer({"export", out.path(), "--format", "msprobe", "-o", again.path()});
  ASSERT_EQ(e2.exit_code, 0) << e2.out << e2.err;
  EXPECT_NE(e2.err.find("is an msprobe dump (task tensor"), std::string::npos) << e2.err;
  RunResult same = checkDump(again.path(), out.path());
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
}

TEST(Msprobe, StatisticsRecordingsExportAsTheStatisticsTask) {
  TempDir out;
  RunResult e = analyzer({"export", recording(Variant::ReferenceLevel1), "--format", "msprobe", "-o", out.path()});
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  const nlohmann::json dump = readJson(out / "step0/rank0/dump.json");
  EXPECT_EQ(dump["task"], "statistics");
  EXPECT_TRUE(dump["dump_data_dir"].is_null());
  EXPECT_FALSE(fs::exists(out / "step0/rank0/dump_tensor_data"));
  const nlohmann::json& leaf = dump["data"]["Aten.gelu.0.forward"]["output"][0];
  for (const char* stat : {"Max", "Min", "Mean", "Norm"}) EXPECT_TRUE(leaf[stat].is_number()) << stat;
}

TEST(Msprobe, TheFixturesRoundTripThroughAcc) {
  for (const std::string dump : {"dump_ref", "dump_dut", "stat_ref", "stat_dut"}) {
    TempDir out;
    RunResult e = analyzer({"export", fixture(dump), "--format", "msprobe", "-o", out.path()});
    ASSERT_EQ(e.exit_code, 0) << dump << e.out << e.err;
    // Every entry of msprobe's own dump, under its own name, with the same
    // tensors (bit for bit) and statistics.
    RunResult same = checkDump(out.path(), fixture(dump));
    EXPECT_EQ(same.exit_code, 0) << dump << "\n" << same.out << same.err;
  }
}

TEST(Msprobe, CompareOfTheFixturePairNamesTheExtraMultiplication) {
  for (const std::string task : {"dump", "stat"}) {
    TempDir out;
    Analysis a = analyze({"compare", fixture(task + "_ref"), fixture(task + "_dut")}, out.path());
    EXPECT_EQ(a.run.exit_code, 1) << a.run.out << a.run.err;
    const nlohmann::json& first = a.summary["first_divergence"];
    ASSERT_TRUE(first.is_object()) << a.run.out;
    // GELU's output matches; linear.1 reads what the extra mul made of it.
    EXPECT_EQ(first["name"], "Functional.linear.1.fwd") << a.run.out;
    EXPECT_EQ(first["step"], 0);
    ASSERT_TRUE(first.contains("fed_by")) << first.dump(2);
    EXPECT_EQ(first["fed_by"]["name"], "Tensor.__mul__.0.fwd");
    EXPECT_EQ(first["fed_by"]["only_in"], "DIR1");
    EXPECT_NE(a.run.out.find("the drift starts at Tensor.__mul__.0.fwd"), std::string::npos) << a.run.out;
    EXPECT_EQ(a.summary["counts"]["unmatched1"], 4);  // the mul's forward and backward, both steps
  }
}

TEST(Msprobe, ComparingExportedRecordingsNamesTheWrongKernel) {
  TempDir ref, wrong, out;
  ASSERT_EQ(analyzer({"export", recording(Variant::Reference), "--format", "msprobe", "-o", ref.path()}).exit_code, 0);
  ASSERT_EQ(analyzer({"export", recording(Variant::WrongForward), "--format", "msprobe", "-o", wrong.path()}).exit_code, 0);
  Analysis a = analyze({"compare", ref.path(), wrong.path()}, out.path());
  EXPECT_EQ(a.run.exit_code, 1) << a.run.out << a.run.err;
  EXPECT_EQ(a.summary["first_divergence"]["name"], "Aten.gelu.0.fwd") << a.run.out;
  EXPECT_EQ(a.summary["first_divergence"]["origin"], true) << a.run.out;
}

TEST(Msprobe, ABrokenDumpIsNamed) {
  TempDir dump, out;
  fs::create_directories(dump / "step0/rank0");
  std::ofstream(dump / "step0/rank0/dump.json") << "{\"task\": \"tensor\", \"data\": {";
  RunResult r = analyzer({"compare", dump.path(), fixture("dump_ref"), "-o", out.path()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dump / "step0/rank0/dump.json: not valid JSON"), std::string::npos) << r.err;
  // A tensor file that is no torch.save file: that tensor keeps its
  // statistics, and the dump is still compared.
  TempDir copy, out2;
  fs::copy(fixture("dump_ref"), copy.path(), fs::copy_options::recursive);
  std::string victim;
  for (const auto& e : fs::recursive_directory_iterator(copy.path())) {
    if (e.path().filename() == "Functional.gelu.0.forward.output.0.pt") victim = e.path().string();
  }
  ASSERT_FALSE(victim.empty());
  std::ofstream(victim, std::ios::trunc) << "not a zip";
  RunResult c = analyzer({"compare", copy.path(), fixture("dump_ref"), "-o", out2.path()});
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_NE(c.err.find(victim + ": not a torch.save file"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("1 tensor file(s) unreadable: statistics only"), std::string::npos) << c.err;
}

// The .pt reader on what torch.save writes: views of larger storages,
// every element type, 0-d and 5-d tensors; and the writer's files read back.
TEST(Msprobe, PtFilesReadAsTorchSavedThem) {
  TempDir dir;
  RunResult made = run({{python(), testScript("make_pt_files.py"), dir.path()}, {}, "", false, ""});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const nlohmann::json index = readJson(dir / "index.json");
  ASSERT_GE(index.size(), 16u);
  for (const auto& [name, meta] : index.items()) {
    PtTensor t = analyzer::msprobe::readPt(dir / (name + ".pt"));
    EXPECT_EQ(analyzer::msprobe::torchName(t.dtype), meta[0].get<std::string>()) << name;
    EXPECT_EQ(t.shape, meta[1].get<std::vector<int64_t>>()) << name;
    EXPECT_EQ(t.data, readFile(dir / (name + ".bin"))) << name;
    // Written by acc, read back the same.
    const std::string copy = dir / (name + ".acc.pt");
    analyzer::msprobe::writePt(copy, t);
    PtTensor back = analyzer::msprobe::readPt(copy);
    EXPECT_EQ(back.dtype, t.dtype) << name;
    EXPECT_EQ(back.shape, t.shape) << name;
    EXPECT_EQ(back.data, t.data) << name;
  }
  EXPECT_THROW(analyzer::msprobe::readPt(dir / "index.json"), analyzer::msprobe::PtError);
}

}  // namespace
}  // namespace acc::test
