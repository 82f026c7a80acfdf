// Module paths (recorder/python/module_paths.h): each record names the innermost
// nn.Module running its op, learnt from torch's global module hooks without
// any change to the program (tests/scripts/nested_modules.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "tests/e2e/harness.h"

namespace acc::test {
namespace {

using format::Pass;

struct Recorded {
  TempDir dir;
  RunResult result;
  Recording rec;
};

std::unique_ptr<Recorded> record(std::map<std::string, std::string> env) {
  auto run = std::make_unique<Recorded>();
  env.emplace("ACC_LEVEL", "0");
  run->result = recordPython(testScript("nested_modules.py"), run->dir.path(), std::move(env));
  if (exists(run->dir / "rank0/records.acc")) run->rec = readRank(run->dir / "rank0");
  return run;
}

const Recorded& full() {
  static auto run = record({});
  return *run;
}

// The modules of one op's top-level forward records in one step, in order.
std::vector<std::string> modulesOf(const Recording& rec, const std::string& op, int64_t step) {
  std::vector<std::string> out;
  for (const auto& r : rec.records) {
    if (r.op == op && r.pass == Pass::Forward && r.step == step && r.depth == 0) out.push_back(r.module);
  }
  return out;
}

TEST(ModulePaths, ForwardRecordsNameTheInnermostModule) {
  const Recorded& got = full();
  ASSERT_EQ(got.result.exit_code, 0) << got.result.err;
  ASSERT_FALSE(got.rec.records.empty());
  for (const auto& r : got.rec.records) EXPECT_TRUE(r.has_module) << r.name;
  for (int64_t step : {0, 1}) {
    using V = std::vector<std::string>;
    // The shared module is named by its first attribute (named_modules()),
    // however it is called, and once per call.
    EXPECT_EQ(modulesOf(got.rec, "aten::linear", step),
              (V{"embed", "layers.0.mlp.0", "layers.1.mlp.0", "shared", "shared", "head"}))
        << "step " << step;
    EXPECT_EQ(modulesOf(got.rec, "aten::layer_norm", step), (V{"layers.0.norm", "layers.1.norm"}));
    EXPECT_EQ(modulesOf(got.rec, "aten::gelu", step), (V{"layers.0.mlp.1", "layers.1.mlp.1"}));
    // x + mlp(...); torch 2.x's SGD adds outside every module too.
    V adds = modulesOf(got.rec, "aten::add", step);
    adds.erase(std::remove(adds.begin(), adds.end(), ""), adds.end());
    EXPECT_EQ(adds, (V{"layers.0", "layers.1"}));
    // The outermost module's own op, and the loss outside every module.
    EXPECT_EQ(modulesOf(got.rec, "aten::relu", step), (V{""}));
    EXPECT_EQ(modulesOf(got.rec, "aten::mse_loss", step), (V{""}));
  }
}

TEST(ModulePaths, BackwardRecordsCarryTheirForwardOpsModule) {
  const Recorded& got = full();
  size_t linked = 0;
  std::map<std::string, size_t> gelu_backward;
  for (const auto& r : got.rec.records) {
    if (r.pass != Pass::Backward || r.forward_name.empty()) continue;
    EXPECT_TRUE(r.has_module) << r.name;
    const format::OpRecord* fwd = nullptr;
    for (const auto& f : got.rec.records) {
      if (f.name == r.forward_name && f.step == r.step) fwd = &f;
    }
    ASSERT_NE(fwd, nullptr) << r.name;
    EXPECT_EQ(r.module, fwd->module) << r.name;
    if (r.op == "aten::gelu") ++gelu_backward[r.module];
    ++linked;
  }
  EXPECT_GT(linked, 10u);
  EXPECT_EQ(gelu_backward, (std::map<std::string, size_t>{{"layers.0.mlp.1", 2}, {"layers.1.mlp.1", 2}}));
}

TEST(ModulePaths, HooksLeaveTheLossesBitIdentical) {
  RunResult plain = runPythonPlain(testScript("nested_modules.py"));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(lossLines(plain.out).size(), 2u);
  EXPECT_EQ(lossLines(full().result.out), lossLines(plain.out));
}

TEST(ModulePaths, ModulesFilterKeepsOnlyOpsInsideThem) {
  auto run = record({{"ACC_MODULES", "layers.1,head"}});
  ASSERT_EQ(run->result.exit_code, 0) << run->result.err;
  auto inside = [](const std::string& m) {
    return m == "head" || m == "layers.1" || m.rfind("layers.1.", 0) == 0;
  };
  std::vector<std::string> expected;
  for (const auto& r : full().rec.records) {
    if (inside(r.module)) expected.push_back(r.name + "@" + std::to_string(r.step));
  }
  std::vector<std::string> got;
  bool backward = false;
  for (const auto& r : run->rec.records) {
    EXPECT_TRUE(inside(r.module)) << r.name << " in " << r.module;
    backward |= r.pass == Pass::Backward;
    got.push_back(r.name + "@" + std::to_string(r.step));
  }
  EXPECT_TRUE(backward);
  EXPECT_EQ(got, expected);  // the same records, the same names: filters never rename
  EXPECT_EQ(run->rec.manifest["config"]["modules"], (nlohmann::json{"layers.1", "head"}));

  // Prefixes match whole components: "layer" is no module of this model.
  auto none = record({{"ACC_MODULES", "layer"}});
  ASSERT_EQ(none->result.exit_code, 0) << none->result.err;
  EXPECT_TRUE(none->rec.records.empty());
}

TEST(ModulePaths, ListAndShowPrintThem) {
  const Recorded& r = full();
  RunResult json = analyzer({"list", r.dir.path(), "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  std::istringstream lines(json.out);
  std::string line;
  size_t norms = 0;
  while (std::getline(lines, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    ASSERT_TRUE(j.contains("module")) << line;
    ASSERT_TRUE(j["module"].is_string()) << line;
    norms += j["module"] == "layers.0.norm";
  }
  EXPECT_GT(norms, 0u);
  RunResult human = analyzer({"list", r.dir.path()});
  EXPECT_NE(human.out.find("  in layers.1.mlp.1\n"), std::string::npos) << human.out;
  const format::OpRecord* gelu = nullptr;
  for (const auto& rec : r.rec.records) {
    if (rec.op == "aten::gelu" && rec.pass == Pass::Forward && !gelu) gelu = &rec;
  }
  ASSERT_NE(gelu, nullptr);
  RunResult show = analyzer({"show", r.dir.path(), gelu->name});
  EXPECT_NE(show.out.find("  module    layers.0.mlp.1\n"), std::string::npos) << show.out;
}

TEST(ModulePaths, CppProgramsRecordNoPaths) {
  TempDir dir;
  Command c;
  c.argv = {binDir() + "/acc-example-cpp-train"};
  c.env = {{"ACC_OUTPUT_DIR", dir.path()}, {"ACC_LEVEL", "0"}};
  RunResult rec = run(c);
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  Recording r = readRank(dir / "rank0");
  ASSERT_FALSE(r.records.empty());
  for (const auto& op : r.records) EXPECT_FALSE(op.has_module) << op.name;
  RunResult json = analyzer({"list", dir.path(), "--json"});
  EXPECT_NE(json.out.find("\"module\":null"), std::string::npos) << json.out.substr(0, 500);
  // Selecting by module there says why nothing is recorded.
  TempDir filtered;
  c.env = {{"ACC_OUTPUT_DIR", filtered.path()}, {"ACC_MODULES", "fc1"}};
  RunResult none = run(c);
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.err.find("acc: ACC_MODULES needs a Python program (module hooks); this one has no Python: no op is "
                          "recorded"),
            std::string::npos)
      << none.err;
}

}  // namespace
}  // namespace acc::test
