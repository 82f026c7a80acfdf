// ACC_GRADS: a grad::{parameter} record per parameter at every optimizer
// step, holding the gradient the program saw, whatever the op filters; and
// compare's parameter-by-step map, which says where two runs' gradients part
// without ever blaming a gradient record for a divergence.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "tests/compare/recordings.h"

namespace acc::test {
namespace {
namespace fs = std::filesystem;

using format::Pass;

const std::vector<std::string> kNestedParameters = {
    "embed.weight", "embed.bias",
    "layers.0.norm.weight", "layers.0.norm.bias", "layers.0.mlp.0.weight", "layers.0.mlp.0.bias",
    "layers.1.norm.weight", "layers.1.norm.bias", "layers.1.mlp.0.weight", "layers.1.mlp.0.bias",
    "shared.weight", "shared.bias", "head.weight", "head.bias"};

std::vector<const format::OpRecord*> gradientRecords(const Recording& rec, int64_t step) {
  std::vector<const format::OpRecord*> out;
  for (const auto& r : rec.records) {
    if (r.op == "acc::grad" && r.step == step) out.push_back(&r);
  }
  return out;
}

TEST(Gradients, OneRecordPerParameterAndStepHoldingTheGradientTheProgramSaw) {
  TempDir dir, grads;
  RunResult plain = runPythonPlain(testScript("nested_modules.py"));
  RunResult r = recordPython(testScript("nested_modules.py"), dir.path(),
                             {{"ACC_LEVEL", "2"}, {"ACC_GRADS", "1"}, {"GRADS_OUT", grads.path()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lossLines(r.out), lossLines(plain.out));  // handing gradients over changes nothing
  Recording rec = readRank(dir / "rank0");
  EXPECT_EQ(rec.manifest["config"]["grads"], true);
  for (int64_t step : {0, 1}) {
    std::vector<std::string> names;
    for (const format::OpRecord* g : gradientRecords(rec, step)) {
      names.push_back(g->name.substr(6));
      EXPECT_EQ(g->pass, Pass::Forward);
      ASSERT_EQ(g->tensors.size(), 1u) << g->name;
      const format::Tensor& t = g->tensors[0];
      EXPECT_TRUE(t.has_stats) << g->name;
      ASSERT_TRUE(t.has_data) << g->name;
      // Byte for byte the gradient the optimizer read.
      EXPECT_EQ(t.data, readFile(grads / (std::to_string(step) + "/" + g->name.substr(6)))) << g->name;
      // Its module is the parameter's owner.
      EXPECT_EQ(g->module + "." + g->name.substr(g->name.rfind('.') + 1), g->name.substr(6));
    }
    // Every parameter once: the module reached as shared and tied has its
    // parameters named once, by the first attribute.
    EXPECT_EQ(names, kNestedParameters) << "step " << step;
  }
  // Handing over runs ops that are no records and take no op numbers: the
  // other records are those of a run without ACC_GRADS.
  TempDir without, grads2;
  RunResult r2 = recordPython(testScript("nested_modules.py"), without.path(),
                              {{"ACC_LEVEL", "0"}, {"GRADS_OUT", grads2.path()}});
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  std::vector<std::string> a, b;
  for (const auto& x : rec.records) {
    if (x.op != "acc::grad") a.push_back(x.name);
  }
  for (const auto& x : readRank(without / "rank0").records) b.push_back(x.name);
  EXPECT_EQ(a, b);
}

TEST(Gradients, RecordedWhateverTheOpFilters) {
  TempDir dir;
  RunResult r = recordPython(testScript("nested_modules.py"), dir.path(),
                             {{"ACC_GRADS", "1"}, {"ACC_OP_LIST", "relu"}, {"ACC_STEPS", "1"}, {"ACC_PASSES", "fwd"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Recording rec = readRank(dir / "rank0");
  for (int64_t step : {0, 1}) EXPECT_EQ(gradientRecords(rec, step).size(), kNestedParameters.size()) << step;
  for (const auto& x : rec.records) {
    if (x.op == "acc::grad") continue;
    EXPECT_EQ(x.op, "aten::relu") << x.name;
    EXPECT_EQ(x.step, 1) << x.name;
  }
}

std::string gradRun(const std::string& name, std::map<std::string, std::string> env) {
  env.emplace("ACC_LEVEL", "2");
  env["ACC_GRADS"] = "1";
  return cachedRecording("grads_" + name, testScript("gelu_mlp.py"), env);
}

TEST(Gradients, CompareMapsWhereGradientsPartAndBlamesTheKernel) {
  TempDir out;
  const std::string ref = gradRun("reference", {});
  const std::string wrong =
      gradRun("wrong_backward", {{"WRONG_GELU_LIB", ACC_WRONG_GELU_LIB}, {"WRONG_GELU", "bwd"}});
  Analysis a = analyze({"compare", ref, wrong, "-o", out.path()}, out.path());
  EXPECT_EQ(a.run.exit_code, 1) << a.run.out << a.run.err;
  // The origin is still the wrong kernel, not a gradient record.
  EXPECT_EQ(a.summary["first_divergence"]["op"], "aten::gelu") << a.summary["first_divergence"].dump(2);
  EXPECT_EQ(a.summary["first_divergence"]["pass"], "bwd");
  for (const auto& o : a.summary["origins"]) EXPECT_NE(o["op"], "acc::grad") << o.dump();
  const nlohmann::json& g = a.summary["gradients"];
  ASSERT_TRUE(g.is_object()) << a.summary.dump(2);
  EXPECT_EQ(g["parameters"], 4);  // 0.weight, 0.bias, 2.weight, 2.bias
  // The first Linear's gradients flow through gelu's backward: they part at
  // step 0; the last Linear's do not at step 0.
  ASSERT_TRUE(g["first_failing"].is_object()) << g.dump(2);
  EXPECT_EQ(g["first_failing"]["parameter"], "0.weight");
  EXPECT_EQ(g["first_failing"]["step"], 0);
  EXPECT_LT(g["first_failing"]["sign_agree"].get<double>(), 1.0001);
  for (const auto& row : g["rows"]) {
    if (row["parameter"].get<std::string>().rfind("2.", 0) != 0) continue;
    EXPECT_EQ(row["steps"][0]["verdict"], "pass") << row.dump();
    EXPECT_EQ(row["steps"][0]["sign_agree"], 1.0) << row.dump();
  }
  EXPECT_NE(a.run.out.find("gradients part first at step 0: 0.weight"), std::string::npos) << a.run.out;
  const std::string html = readFile(out / "report.html");
  EXPECT_NE(html.find("<section id=\"gradients\">"), std::string::npos);
  EXPECT_NE(html.find("They part first at step 0: <code>0.weight</code>"), std::string::npos);
}

TEST(Gradients, BenignPairsShowNoPartingGradient) {
  const std::string ref = gradRun("reference", {});
  for (const auto& [name, env] : std::vector<std::pair<std::string, std::map<std::string, std::string>>>{
           {"reference_again", {}}, {"float64", {{"GELU_DTYPE", "float64"}}}}) {
    SCOPED_TRACE(name);
    TempDir out;
    Analysis a = analyze({"compare", gradRun(name, env), ref, "-o", out.path()}, out.path());
    EXPECT_EQ(a.run.exit_code, 0) << a.run.out << a.run.err;
    ASSERT_TRUE(a.summary["gradients"].is_object()) << a.summary.dump(2);
    EXPECT_TRUE(a.summary["gradients"]["first_failing"].is_null()) << a.summary["gradients"].dump(2);
    EXPECT_EQ(a.run.out.find("gradients part"), std::string::npos) << a.run.out;
  }
}

}  // namespace
}  // namespace acc::test
