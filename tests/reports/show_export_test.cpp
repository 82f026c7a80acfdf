// acc-analyzer show and export on real recordings of examples/mlp_train.py
// (level 2, Python stacks) and tests/scripts/mixed_dtypes.py.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <memory>

#include "tests/reports/report_tools.h"

namespace acc::test {
namespace {

// The recordings, made on first use and shared by the tests of the suite
// (ctest runs each test in its own process, so each records only what it uses).
class ShowExport : public ::testing::Test {
 protected:
  static void TearDownTestSuite() { dir_.reset(); }
  // Records `name` (mlp, mixed or level1) once; returns its directory.
  static std::string path(const std::string& name) {
    if (!dir_) dir_ = std::make_unique<TempDir>();
    const std::string dir = *dir_ / name;
    if ((name == "mlp" || name == "mixed" || name == "level1") && !exists(dir)) {
      RunResult r = name == "mlp"     ? recordPython(example("mlp_train.py"), dir, {{"ACC_LEVEL", "2"}, {"ACC_STACK", "python"}})
                    : name == "mixed" ? recordPython(testScript("mixed_dtypes.py"), dir, {{"ACC_LEVEL", "2"}})
                                      : recordPython(example("mlp_train.py"), dir, {{"ACC_LEVEL", "1"}, {"MLP_STEPS", "1"}});
      EXPECT_EQ(r.exit_code, 0) << "recording " << name << ": " << r.err;
    }
    return dir;
  }

  static std::unique_ptr<TempDir> dir_;
};
std::unique_ptr<TempDir> ShowExport::dir_;

// The bytes numpy should hold for a recorded tensor: bfloat16 widened to float32.
std::string numpyBytes(const format::Tensor& t) {
  if (t.dtype != format::Dtype::BFloat16) return t.data;
  std::string out(t.data.size() * 2, '\0');
  for (size_t i = 0; i + 1 < t.data.size(); i += 2) out[2 * i + 2] = t.data[i], out[2 * i + 3] = t.data[i + 1];
  return out;
}

// Exports `recording` (one rank) and checks every file numpy loads against
// the recorded tensors, and that every tensor with data was exported.
void checkExport(const std::string& recording, const std::string& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"export", recording, "-o", out, "--format", "npy"};
  args.insert(args.end(), extra.begin(), extra.end());
  RunResult exported = analyzer(args);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const std::string py = pythonWith("numpy");
  ASSERT_FALSE(py.empty()) << "no Python with numpy";
  RunResult loaded = run({{py, testScript("check_npy.py"), out}, {}, "", false, ""});
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
  nlohmann::json numpy = nlohmann::json::parse(loaded.out);
  nlohmann::json index = nlohmann::json::parse(readFile(out + "/index.json"));

  Recording rec = readRank(recording + "/rank0");
  size_t with_data = 0;
  for (const auto& r : rec.records) {
    for (const auto& t : r.tensors) with_data += t.has_data;
  }
  if (extra.empty()) {
    EXPECT_EQ(index["files"].size(), with_data);
  }
  ASSERT_GT(index["files"].size(), 0u);
  for (const nlohmann::json& f : index["files"]) {
    const std::string file = f["file"];
    SCOPED_TRACE(file);
    const format::OpRecord* record = nullptr;
    for (const auto& r : rec.records) {
      if (r.index == f["index"].get<uint64_t>()) record = &r;
    }
    ASSERT_NE(record, nullptr);
    EXPECT_EQ(record->name, f["name"].get<std::string>());
    EXPECT_EQ(record->step, f["step"]);
    const format::Tensor* tensor = nullptr;
    for (const auto& t : record->tensors) {
      if (format::roleName(t.role) == f["role"] && t.position == f["position"] && t.item == f["item"]) tensor = &t;
    }
    ASSERT_NE(tensor, nullptr);
    EXPECT_EQ(format::dtypeName(tensor->dtype), f["dtype"]);
    EXPECT_EQ(nlohmann::json(tensor->shape), numpy[file]["shape"]);
    const std::string bytes = numpyBytes(*tensor);
    EXPECT_EQ(::crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())),
              numpy[file]["crc32"].get<uint32_t>());
  }
}

// The name of the first record of `op` in `step` and `pass`: op numbers
// depend on the torch version (1.13's zero_grad zeroes gradients with ops,
// 2.x's sets them to None), so tests look them up.
std::string firstName(const Recording& rec, const std::string& op, int64_t step, format::Pass pass) {
  for (const auto& r : rec.records) {
    if (r.op == op && r.step == step && r.pass == pass) return r.name;
  }
  ADD_FAILURE() << "no " << op << " in step " << step;
  return "";
}

std::string fileName(std::string name) { return name.replace(name.find("::"), 2, "__"); }

TEST_F(ShowExport, ExportEveryTensorLoadsInNumpyWithTheRecordedValues) {
  TempDir out;
  checkExport(path("mlp"), out.path());
  Recording rec = readRank(path("mlp") + "/rank0");
  const std::string fwd = firstName(rec, "aten::linear", 1, format::Pass::Forward);
  const std::string bwd = firstName(rec, "aten::linear", 0, format::Pass::Backward);
  EXPECT_TRUE(exists(out / ("rank0/step1/" + fileName(fwd) + ".output0.npy"))) << fwd;
  EXPECT_TRUE(exists(out / ("rank0/step0/" + fileName(bwd) + ".grad_out2.npy"))) << bwd;
}

TEST_F(ShowExport, ExportEveryDtypeIncludingHalfAndBfloat16) {
  TempDir out;
  checkExport(path("mixed"), out.path());
  nlohmann::json index = nlohmann::json::parse(readFile(out / "index.json"));
  std::map<std::string, std::string> npy;
  for (const auto& f : index["files"]) npy[f["dtype"]] = f["npy_dtype"];
  EXPECT_EQ(npy["float16"], "<f2");
  EXPECT_EQ(npy["bfloat16"], "<f4");
  EXPECT_EQ(npy["bool"], "|b1");
  EXPECT_EQ(npy["uint8"], "|u1");
  EXPECT_EQ(npy["int8"], "|i1");
  EXPECT_EQ(npy["int16"], "<i2");
  EXPECT_EQ(npy["int32"], "<i4");
  EXPECT_EQ(npy["int64"], "<i8");
  EXPECT_EQ(npy["float64"], "<f8");
  EXPECT_EQ(npy["complex64"], "<c8");
}

TEST_F(ShowExport, ExportNameFilterKeepsMatchingRecordsOnly) {
  TempDir out;
  checkExport(path("mlp"), out.path(), {"--name", "MSE_LOSS", "--name", "relu.8."});
  nlohmann::json index = nlohmann::json::parse(readFile(out / "index.json"));
  std::set<std::string> names;
  for (const auto& f : index["files"]) names.insert(f["name"]);
  Recording rec = readRank(path("mlp") + "/rank0");
  EXPECT_TRUE(names.count(firstName(rec, "aten::mse_loss", 0, format::Pass::Forward))) << index.dump();
  for (const std::string& n : names) {
    EXPECT_TRUE(n.find("mse_loss") != std::string::npos || n.find("relu.8.") != std::string::npos) << n;
  }
  RunResult none = analyzer({"export", path("mlp"), "-o", out / "none", "--name", "no_such_op"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no record"), std::string::npos) << none.err;
}

TEST_F(ShowExport, ExportOfLevel1RecordingSaysThereIsNoData) {
  TempDir out;
  RunResult r = analyzer({"export", path("level1"), "-o", out.path()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no tensor data"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ACC_LEVEL=2"), std::string::npos) << r.err;
  EXPECT_FALSE(exists(out / "index.json"));
}

TEST_F(ShowExport, ExportUsageErrors) {
  EXPECT_EQ(analyzer({"export", "--help"}).exit_code, 0);
  EXPECT_EQ(analyzer({"export", path("mlp")}).exit_code, 2);  // no -o
  RunResult format = analyzer({"export", path("mlp"), "-o", path("x"), "--format", "csv"});
  EXPECT_EQ(format.exit_code, 2);
  EXPECT_NE(format.err.find("npy"), std::string::npos);
  EXPECT_EQ(analyzer({"export", path("missing"), "-o", path("x")}).exit_code, 2);
}

TEST_F(ShowExport, ShowPrintsTensorsStatisticsAndStack) {
  Recording rec = readRank(path("mlp") + "/rank0");
  const std::string name = firstName(rec, "aten::linear", 1, format::Pass::Forward);
  const format::OpRecord* linear = rec.find(name);
  ASSERT_NE(linear, nullptr);
  RunResult r = analyzer({"show", path("mlp"), name});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(name + "  rank 0  step 1"), std::string::npos) << r.out;
  for (const format::Tensor& t : linear->tensors) {
    std::string where = std::string(format::roleName(t.role)) + "[" + std::to_string(t.position) + "]";
    EXPECT_NE(r.out.find(where), std::string::npos) << where << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("float32   [5, 8]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("min "), std::string::npos);
  EXPECT_NE(r.out.find("checksum "), std::string::npos);
  EXPECT_NE(r.out.find("mlp_train.py:34 main"), std::string::npos) << r.out;  // hidden = model[0](x)
  EXPECT_NE(r.out.find("also occurs in 1 other step(s)"), std::string::npos) << r.out;
}

TEST_F(ShowExport, ShowJsonAndStepSelection) {
  Recording rec = readRank(path("mlp") + "/rank0");
  std::string name = firstName(rec, "aten::linear", 1, format::Pass::Forward);
  name.replace(name.size() - 3, 3, "bwd");
  RunResult r = analyzer({"show", path("mlp"), name, "--step", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["name"], name);
  EXPECT_EQ(j["step"], 2);
  EXPECT_EQ(j["grad_fn"], "AddmmBackward0");
  EXPECT_FALSE(j["tensors"].empty());
  ASSERT_FALSE(j["stack"].empty());
  EXPECT_EQ(j["stack"][0]["kind"], "python");
}

TEST_F(ShowExport, ShowUnknownNameExitsTwoWithSuggestions) {
  RunResult r = analyzer({"show", path("mlp"), "aten::linear.99.fwd"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("no record named aten::linear.99.fwd"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean: aten::linear."), std::string::npos) << r.err;

  RunResult rank = analyzer({"show", path("mlp"), "aten::linear.7.fwd", "--rank", "3"});
  EXPECT_EQ(rank.exit_code, 2);
  EXPECT_NE(rank.err.find("no rank 3"), std::string::npos) << rank.err;
  EXPECT_EQ(analyzer({"show", path("mlp")}).exit_code, 2);
  EXPECT_EQ(analyzer({"show", "--help"}).exit_code, 0);
}

}  // namespace
}  // namespace acc::test
