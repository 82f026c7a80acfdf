// Real model code: Hugging Face transformers' Llama decoder and BERT encoder
// (tests/scripts/hf_train.py, random weights from a small config), trained
// with AdamW in float32 and under bfloat16 autocast. Built only where the
// tests' Python can import transformers (the PyPI torch suites).
#include <gtest/gtest.h>

#include <set>

#include "tests/compare/recordings.h"

namespace acc::test {
namespace {

using Env = std::map<std::string, std::string>;

std::string hfRecording(const std::string& name, Env env) {
  return cachedRecording("hf_" + name, testScript("hf_train.py"), std::move(env));
}

std::set<std::string> opsOf(const Recording& rec) {
  std::set<std::string> ops;
  for (const auto& r : rec.records) ops.insert(r.op);
  return ops;
}

// Recording changes nothing the model computes, in float32 and bf16 alike.
TEST(Transformers, RecordedLossesAreBitIdentical) {
  for (const char* model : {"llama", "bert"}) {
    for (const char* autocast : {"", "bf16"}) {
      SCOPED_TRACE(std::string(model) + " autocast '" + autocast + "'");
      const Env env = {{"MODEL", model}, {"AUTOCAST", autocast}};
      RunResult plain = runPythonPlain(testScript("hf_train.py"), env);
      ASSERT_EQ(plain.exit_code, 0) << plain.err;
      TempDir dir;
      RunResult r = recordPython(testScript("hf_train.py"), dir.path(), env);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(lossLines(r.out).size(), 2u) << r.out;
      EXPECT_EQ(lossLines(r.out), lossLines(plain.out));
    }
  }
}

// Module paths read like the model's own, and its fused ops are recorded:
// SDPA (forward and its backward node) and RMSNorm's or LayerNorm's pieces.
TEST(Transformers, ModulePathsAreTheModelsOwnAndSdpaIsRecorded) {
  Recording llama = readRank(hfRecording("llama_l1", {{"MODEL", "llama"}}) + "/rank0");
  std::set<std::string> modules;
  bool sdpa_fwd = false, sdpa_bwd = false;
  for (const auto& r : llama.records) {
    modules.insert(r.module);
    if (r.op == "aten::scaled_dot_product_attention") {
      EXPECT_EQ(r.module.rfind("model.layers.", 0), 0u) << r.name << " in " << r.module;
      (r.pass == format::Pass::Forward ? sdpa_fwd : sdpa_bwd) = true;
    }
  }
  for (const char* m : {"model.layers.0.self_attn.q_proj", "model.layers.1.mlp.act_fn", "model.embed_tokens",
                        "model.norm", "lm_head"}) {
    EXPECT_TRUE(modules.count(m)) << m << " not among " << ::testing::PrintToString(modules);
  }
  EXPECT_TRUE(sdpa_fwd);
  EXPECT_TRUE(sdpa_bwd);
  const std::set<std::string> ops = opsOf(llama);
  EXPECT_TRUE(ops.count("aten::silu")) << ::testing::PrintToString(ops);
  Recording bert = readRank(hfRecording("bert_l1", {{"MODEL", "bert"}}) + "/rank0");
  std::set<std::string> bert_modules;
  for (const auto& r : bert.records) bert_modules.insert(r.module);
  EXPECT_TRUE(bert_modules.count("bert.encoder.layer.0.attention.self.query"))
      << ::testing::PrintToString(bert_modules);
  EXPECT_TRUE(opsOf(bert).count("aten::layer_norm"));
}

// A gelu kernel 1e-3 off in BERT's feed-forward: compare names it, in its
// module, at level 1 in float32; check confirms it on a level-2 recording of
// the faulty run alone.
TEST(Transformers, AWrongGeluInBertIsNamedByCompareAndCheck) {
  const std::string reference = hfRecording("bert_l1", {{"MODEL", "bert"}});
  const std::string faulty = hfRecording("bert_wrong_gelu_l1", {{"MODEL", "bert"}, {"WRONG_GELU_LIB", ACC_WRONG_GELU_LIB}});
  TempDir out;
  Analysis c = analyze({"compare", reference, faulty}, out.path());
  EXPECT_EQ(c.run.exit_code, 1) << c.run.out << c.run.err;
  ASSERT_FALSE(c.summary["origins"].empty()) << c.run.out;
  EXPECT_EQ(c.summary["origins"][0]["op"], "aten::gelu") << c.run.out;
  EXPECT_EQ(c.summary["origins"][0]["module"], "bert.encoder.layer.0.intermediate.intermediate_act_fn") << c.run.out;

  const std::string faulty2 = hfRecording("bert_wrong_gelu_l2", {{"MODEL", "bert"}, {"ACC_LEVEL", "2"},
                                                                   {"STEPS", "1"}, {"WRONG_GELU_LIB", ACC_WRONG_GELU_LIB}});
  TempDir checked;
  Analysis k = analyze({"check", faulty2}, checked.path());
  EXPECT_EQ(k.run.exit_code, 1) << k.run.out << k.run.err;
  ASSERT_TRUE(k.summary["first_divergence"].is_object()) << k.run.out;
  EXPECT_EQ(k.summary["first_divergence"]["op"], "aten::gelu") << k.run.out;
  EXPECT_EQ(k.summary["first_divergence"]["replay"]["verdict"], "confirmed") << k.run.out;
}

// Benign pairs stay quiet: one thread against two, in float32 and under
// bf16 autocast, for both models, at level 1 (what users leave on).
TEST(Transformers, ThreadCountsAreQuietAtLevel1) {
  for (const char* model : {"llama", "bert"}) {
    for (const char* autocast : {"", "bf16"}) {
      const std::string tag = std::string(model) + (*autocast ? "_bf16" : "");
      SCOPED_TRACE(tag);
      const std::string one = hfRecording(tag + "_l1", {{"MODEL", model}, {"AUTOCAST", autocast}});
      const std::string two = hfRecording(tag + "_t2_l1", {{"MODEL", model}, {"AUTOCAST", autocast}, {"THREADS", "2"}});
      TempDir out;
      Analysis c = analyze({"compare", one, two}, out.path());
      EXPECT_EQ(c.run.exit_code, 0) << c.run.out << c.run.err;
      EXPECT_TRUE(c.summary["origins"].empty()) << c.summary["origins"].dump(2);
    }
  }
}

}  // namespace
}  // namespace acc::test
