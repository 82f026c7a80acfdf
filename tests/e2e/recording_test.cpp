// What a recording of the MLP example holds: names, passes, links between
// forward and backward, tensors per level, stacks, and the training results
// being bit-identical to an unrecorded run.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cmath>
#include <cstring>
#include <regex>
#include <set>

#include "tests/e2e/harness.h"

namespace acc::test {
namespace {

using format::Pass;
using format::Role;

const std::string& plainMlpOutput() {
  static const std::string out = runPythonPlain(example("mlp_train.py")).out;
  return out;
}

struct RecordedMlp {
  TempDir dir;
  RunResult result;
  Recording rec;
};

// GCC 14 warns of a dangling reference wherever a call with a temporary
// argument returns a reference; recordedMlp's lives in its cache.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 14
#define ACC_CACHED [[gnu::no_dangling]]
#else
#define ACC_CACHED
#endif

// One recording per configuration, shared by the tests that read it.
ACC_CACHED const RecordedMlp& recordedMlp(const std::map<std::string, std::string>& env) {
  static std::map<std::map<std::string, std::string>, std::unique_ptr<RecordedMlp>> cache;
  auto& slot = cache[env];
  if (!slot) {
    slot = std::make_unique<RecordedMlp>();
    slot->result = recordPython(example("mlp_train.py"), slot->dir.path(), env);
    if (exists(slot->dir / "rank0/records.acc")) slot->rec = readRank(slot->dir / "rank0");
  }
  return *slot;
}

// Whether files in `dir` can be opened for O_DIRECT.
bool takesDirectIo(const std::string& dir) {
  const std::string probe = dir + "/direct_probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

std::vector<const format::Tensor*> tensorsOf(const format::OpRecord& r, Role role) {
  std::vector<const format::Tensor*> out;
  for (const auto& t : r.tensors) {
    if (t.role == role) out.push_back(&t);
  }
  return out;
}

const format::OpRecord* firstInStep(const Recording& rec, const std::string& prefix, int64_t step,
                                    Pass pass) {
  for (const auto& r : rec.records) {
    if (r.step == step && r.pass == pass && r.name.rfind(prefix, 0) == 0) return &r;
  }
  return nullptr;
}

TEST(Recording, ForwardRecordsAreNamedOpNumberPass) {
  const auto& m = recordedMlp({});
  ASSERT_EQ(m.result.exit_code, 0) << m.result.err;
  ASSERT_FALSE(m.rec.records.empty());
  const std::regex fwd(R"(^[a-z_]+::[A-Za-z0-9_.]+\.(\d+)\.fwd$)");
  for (const auto& r : m.rec.records) {
    if (r.pass != Pass::Forward) continue;
    std::smatch match;
    ASSERT_TRUE(std::regex_match(r.name, match, fwd)) << r.name;
    EXPECT_EQ(std::stoull(match[1]), r.op_number) << r.name;
    EXPECT_EQ(r.name, r.op + "." + std::to_string(r.op_number) + ".fwd");
    EXPECT_EQ(r.depth, 0u) << "only top-level ops by default: " << r.name;
  }
  // Numbers restart at every step and count forward ops in order.
  for (int64_t step = 0; step < 3; ++step) {
    uint64_t last = 0;
    bool first = true;
    for (const auto& r : m.rec.records) {
      if (r.step != step || r.pass != Pass::Forward) continue;
      if (!first) {
        EXPECT_GT(r.op_number, last) << r.name;
      } else if (step > 0) {
        EXPECT_EQ(r.op_number, 0u) << r.name;
      }
      first = false;
      last = r.op_number;
    }
    EXPECT_FALSE(first) << "no forward records in step " << step;
  }
}

TEST(Recording, TheSameStepsGetTheSameNames) {
  const auto& m = recordedMlp({});
  std::vector<std::string> step1, step2;
  for (const auto& r : m.rec.records) {
    if (r.step == 1) step1.push_back(r.name);
    if (r.step == 2) step2.push_back(r.name);
  }
  ASSERT_FALSE(step1.empty());
  EXPECT_EQ(step1, step2);
}

TEST(Recording, BackwardRecordsLinkToTheirForwardOp) {
  const auto& m = recordedMlp({});
  const auto* linear = firstInStep(m.rec, "aten::linear.", 1, Pass::Forward);
  ASSERT_NE(linear, nullptr);
  const std::string base = linear->op + "." + std::to_string(linear->op_number);
  const auto* bwd = m.rec.find(base + ".bwd");
  const auto* bwd2 = m.rec.find(base + ".bwd.2");
  ASSERT_NE(bwd, nullptr) << base;
  ASSERT_NE(bwd2, nullptr) << base;
  EXPECT_EQ(bwd->grad_fn, "AddmmBackward0");
  EXPECT_EQ(bwd2->grad_fn, "TBackward0");
  for (const auto* b : {bwd, bwd2}) {
    EXPECT_EQ(b->pass, Pass::Backward);
    EXPECT_EQ(b->forward_name, linear->name);
    EXPECT_EQ(b->op, "aten::linear");
    EXPECT_GT(b->index, linear->index);
  }
  // Every backward record of a linked node names an existing forward record.
  for (const auto& r : m.rec.records) {
    if (r.pass == Pass::Backward && !r.forward_name.empty()) {
      EXPECT_NE(m.rec.find(r.forward_name), nullptr) << r.name;
    }
  }
  const auto* relu = firstInStep(m.rec, "aten::relu.", 1, Pass::Forward);
  ASSERT_NE(relu, nullptr);
  const auto* relu_bwd = m.rec.find(relu->op + "." + std::to_string(relu->op_number) + ".bwd");
  ASSERT_NE(relu_bwd, nullptr);
  EXPECT_EQ(relu_bwd->grad_fn, "ReluBackward0");
}

TEST(Recording, BackwardRecordsHoldGradientsInAndOut) {
  const auto& m = recordedMlp({});
  const auto* relu = firstInStep(m.rec, "aten::relu.", 1, Pass::Forward);
  ASSERT_NE(relu, nullptr);
  const auto* bwd = m.rec.find(relu->op + "." + std::to_string(relu->op_number) + ".bwd");
  ASSERT_NE(bwd, nullptr);
  auto grad_in = tensorsOf(*bwd, Role::GradIn);    // grad of relu's output
  auto grad_out = tensorsOf(*bwd, Role::GradOut);  // grad of relu's input
  ASSERT_EQ(grad_in.size(), 1u);
  ASSERT_EQ(grad_out.size(), 1u);
  auto out = tensorsOf(*relu, Role::Output);
  auto in = tensorsOf(*relu, Role::Input);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(grad_in[0]->shape, out[0]->shape);
  EXPECT_EQ(grad_out[0]->shape, in[0]->shape);
  EXPECT_TRUE(grad_in[0]->has_stats);
  // relu's gradient is zero wherever the input was negative: the norm can
  // only shrink from the incoming to the outgoing gradient.
  EXPECT_LE(grad_out[0]->stats.norm, grad_in[0]->stats.norm);
}

TEST(Recording, RecordedRunPrintsBitIdenticalLosses) {
  for (const char* level : {"0", "1", "2"}) {
    const auto& m = recordedMlp({{"ACC_LEVEL", level}, {"ACC_STACK", "both"}});
    EXPECT_EQ(m.result.exit_code, 0) << m.result.err;
    EXPECT_EQ(m.result.out, plainMlpOutput()) << "ACC_LEVEL=" << level;
  }
  EXPECT_NE(plainMlpOutput().find("step 2 loss"), std::string::npos);
}

TEST(Recording, Level0HasMetadataAndScalarsButNoStatistics) {
  const auto& m = recordedMlp({{"ACC_LEVEL", "0"}});
  ASSERT_FALSE(m.rec.records.empty());
  bool saw_scalar = false;
  for (const auto& r : m.rec.records) {
    for (const auto& t : r.tensors) {
      EXPECT_FALSE(t.has_stats) << r.name;
      EXPECT_FALSE(t.has_data) << r.name;
      EXPECT_EQ(t.device, "cpu");
      EXPECT_EQ(t.strides.size(), t.shape.size());
    }
    saw_scalar |= !r.scalars.empty();
  }
  EXPECT_TRUE(saw_scalar);
  const auto* linear = firstInStep(m.rec, "aten::linear.", 1, Pass::Forward);
  ASSERT_NE(linear, nullptr);
  auto in = tensorsOf(*linear, Role::Input);
  ASSERT_EQ(in.size(), 3u);  // input, weight, bias
  EXPECT_EQ(in[0]->shape, (std::vector<int64_t>{5, 8}));
  EXPECT_EQ(in[1]->shape, (std::vector<int64_t>{16, 8}));
  EXPECT_EQ(in[0]->dtype, format::Dtype::Float32);
}

TEST(Recording, Level1HasStatisticsOnly) {
  const auto& m = recordedMlp({{"ACC_LEVEL", "1"}});
  const auto* loss = firstInStep(m.rec, "aten::mse_loss.", 0, Pass::Forward);
  ASSERT_NE(loss, nullptr);
  auto out = tensorsOf(*loss, Role::Output);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0]->has_stats);
  EXPECT_FALSE(out[0]->has_data);
  // The loss printed by the script is the statistic's min, max and mean.
  std::smatch match;
  ASSERT_TRUE(std::regex_search(plainMlpOutput(), match, std::regex(R"(step 0 loss (\S+))")));
  const double printed = std::stod(match[1]);
  EXPECT_EQ(static_cast<float>(out[0]->stats.mean), static_cast<float>(printed));
  EXPECT_EQ(out[0]->stats.min, out[0]->stats.max);
  EXPECT_EQ(out[0]->stats.nan_count, 0u);
}

// An op that fills its output with one value (zero_grad's zero_, fill_,
// ones_like) gets the statistics that value implies without a pass over the
// output: those of the pass over the same memory, read again whole as the
// next op's input (ACC_DEDUP=0): exactly but for float rounding of the mean
// and norm, which the pass sums element by element.
TEST(Recording, FilledOutputsHaveThePassesStatistics) {
  TempDir dir;
  RunResult r = recordPython(testScript("cpu_fills.py"), dir.path(), {{"ACC_LEVEL", "1"}, {"ACC_DEDUP", "0"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Recording rec = readRank(dir / "rank0");
  const std::set<std::string> fills = {"aten::zero_", "aten::fill_", "aten::ones_like", "aten::zeros"};
  size_t compared = 0;
  for (size_t i = 0; i + 1 < rec.records.size(); ++i) {
    const format::OpRecord& fill = rec.records[i];
    if (fill.depth != 0 || fills.count(fill.op) == 0) continue;
    // The neg that reads this fill's output (the next record but for a
    // view's in between).
    const format::OpRecord* neg = nullptr;
    for (size_t k = i + 1; k < rec.records.size() && neg == nullptr; ++k) {
      if (rec.records[k].depth != 0) continue;
      if (rec.records[k].op == "aten::neg") neg = &rec.records[k];
      if (fills.count(rec.records[k].op) != 0) break;
    }
    ASSERT_NE(neg, nullptr) << fill.name;
    const format::Tensor* out = nullptr;
    for (const auto& t : fill.tensors) {
      if (t.role == Role::Output) out = &t;
    }
    ASSERT_NE(out, nullptr) << fill.name;
    const format::Tensor& in = neg->tensors.at(0);
    ASSERT_EQ(in.role, Role::Input);
    ASSERT_TRUE(out->has_stats && in.has_stats) << fill.name;
    EXPECT_EQ(out->shape, in.shape) << fill.name;
    EXPECT_EQ(out->stats.checksum, in.stats.checksum) << fill.name;
    EXPECT_EQ(out->stats.min, in.stats.min) << fill.name;
    EXPECT_EQ(out->stats.max, in.stats.max) << fill.name;
    EXPECT_EQ(out->stats.nan_count, in.stats.nan_count) << fill.name;
    EXPECT_EQ(out->stats.inf_count, in.stats.inf_count) << fill.name;
    EXPECT_NEAR(out->stats.mean, in.stats.mean, 1e-12 * std::fabs(in.stats.max)) << fill.name;
    EXPECT_NEAR(out->stats.norm, in.stats.norm, 1e-12 * in.stats.norm) << fill.name;
    ++compared;
  }
  EXPECT_EQ(compared, 8u);
}

TEST(Recording, Level2DataEqualsTheTensorsTheProgramComputed) {
  TempDir saved;
  const auto& m = recordedMlp({{"ACC_LEVEL", "2"}, {"MLP_SAVE_DIR", saved.path()}});
  ASSERT_EQ(m.result.exit_code, 0) << m.result.err;
  auto bytesOf = [&](const format::OpRecord* r, Role role, size_t i) -> std::string {
    if (r == nullptr) return "<no record>";
    auto ts = tensorsOf(*r, role);
    if (ts.size() <= i || !ts[i]->has_data) return "<no data>";
    return ts[i]->data;
  };
  std::vector<const format::OpRecord*> linears;
  for (const auto& r : m.rec.records) {
    if (r.step == 0 && r.pass == Pass::Forward && r.op == "aten::linear") linears.push_back(&r);
  }
  ASSERT_EQ(linears.size(), 2u);
  const auto* relu = firstInStep(m.rec, "aten::relu.", 0, Pass::Forward);
  const auto* loss = firstInStep(m.rec, "aten::mse_loss.", 0, Pass::Forward);
  EXPECT_EQ(bytesOf(linears[0], Role::Input, 0), readFile(saved / "x.bin"));
  EXPECT_EQ(bytesOf(linears[0], Role::Output, 0), readFile(saved / "hidden.bin"));
  EXPECT_EQ(bytesOf(relu, Role::Output, 0), readFile(saved / "activated.bin"));
  EXPECT_EQ(bytesOf(linears[1], Role::Output, 0), readFile(saved / "out.bin"));
  EXPECT_EQ(bytesOf(loss, Role::Output, 0), readFile(saved / "loss.bin"));
  // The weight's gradient leaves the first linear's TBackward0 node.
  const std::string base = "aten::linear." + std::to_string(linears[0]->op_number);
  EXPECT_EQ(bytesOf(m.rec.find(base + ".bwd.2"), Role::GradOut, 0), readFile(saved / "weight0_grad.bin"));
  EXPECT_EQ(readFile(saved / "hidden.bin").size(), 5u * 16u * 4u);
  // Written around the page cache where the filesystem allows it
  // (format/direct_file.h), level 1 through it.
  EXPECT_EQ(m.rec.manifest["direct_io"], takesDirectIo(m.dir.path())) << m.rec.manifest.dump();
  EXPECT_EQ(recordedMlp({}).rec.manifest["direct_io"], false);
}

// The recorder's thread-locals fit the static TLS glibc keeps for late
// modules (recorder/per_thread.h): each access a load, not a call. A
// thread_local of a few hundred bytes more in libacc_core.so, or a build
// without TLS descriptors, makes this "dynamic".
TEST(Recording, ThreadLocalsInStaticTls) {
  const auto& m = recordedMlp({});
#if defined(__x86_64__) || defined(__aarch64__)
  EXPECT_EQ(m.rec.manifest["thread_locals"], "static") << m.rec.manifest.dump();
#else
  EXPECT_EQ(m.rec.manifest["thread_locals"], "unknown") << m.rec.manifest.dump();
#endif
}

TEST(Recording, InPlaceOpInputsAreCapturedBeforeTheOpWritesThem) {
  const auto& m = recordedMlp({{"ACC_LEVEL", "2"}});
  // SGD updates parameters with add_: its input 0 is the old parameter.
  int checked = 0;
  for (const auto& r : m.rec.records) {
    if (r.op != "aten::add_" || r.step != 1) continue;
    auto in = tensorsOf(r, Role::Input);
    auto out = tensorsOf(r, Role::Output);
    ASSERT_FALSE(in.empty());
    ASSERT_FALSE(out.empty());
    EXPECT_NE(in[0]->data, out[0]->data) << r.name;
    ++checked;
  }
  EXPECT_EQ(checked, 4);  // two weights, two biases
}

TEST(Recording, PythonStacksNameTheUserScriptLine) {
  const auto& m = recordedMlp({{"ACC_STACK", "python"}});
  const auto* linear = firstInStep(m.rec, "aten::linear.", 1, Pass::Forward);
  ASSERT_NE(linear, nullptr);
  ASSERT_NE(linear->stack_id, 0u);
  const auto& frames = m.rec.stacks.at(linear->stack_id).frames;
  bool user_line = false;
  for (const auto& f : frames) {
    EXPECT_EQ(f.kind, format::FrameKind::Python);
    user_line |= f.text.find("mlp_train.py:") != std::string::npos && f.text.find(" main") != std::string::npos;
  }
  EXPECT_TRUE(user_line);
  // Stored once per distinct stack: far fewer stacks than records.
  EXPECT_LT(m.rec.stacks.size(), m.rec.records.size() / 2);
  EXPECT_EQ(m.rec.manifest["counts"]["stacks"].get<uint64_t>(), m.rec.stacks.size());
  // Stack records are not op records: the counts stay those of ops.
  EXPECT_EQ(m.rec.manifest["counts"]["written"].get<uint64_t>(), m.rec.records.size());
  EXPECT_EQ(m.rec.manifest["counts"]["stacks_lost"], 0);
}

TEST(Recording, NativeStacksHaveSymbolizedFrames) {
  const auto& m = recordedMlp({{"ACC_STACK", "native"}});
  const auto* linear = firstInStep(m.rec, "aten::linear.", 1, Pass::Forward);
  ASSERT_NE(linear, nullptr);
  ASSERT_NE(linear->stack_id, 0u);
  bool torch_frame = false;
  for (const auto& f : m.rec.stacks.at(linear->stack_id).frames) {
    EXPECT_EQ(f.kind, format::FrameKind::Native);
    torch_frame |= f.text.find("libtorch") != std::string::npos;
  }
  EXPECT_TRUE(torch_frame);
}

TEST(Recording, BothStacksHavePythonThenNativeFrames) {
  const auto& m = recordedMlp({{"ACC_STACK", "both"}});
  const auto* linear = firstInStep(m.rec, "aten::linear.", 1, Pass::Forward);
  ASSERT_NE(linear, nullptr);
  const auto& frames = m.rec.stacks.at(linear->stack_id).frames;
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.front().kind, format::FrameKind::Python);
  EXPECT_EQ(frames.back().kind, format::FrameKind::Native);
}

TEST(Recording, NoStacksByDefault) {
  const auto& m = recordedMlp({});
  for (const auto& r : m.rec.records) EXPECT_EQ(r.stack_id, 0u) << r.name;
  EXPECT_TRUE(m.rec.stacks.empty());
}

TEST(Recording, NestedRecordsOpsInsideOps) {
  const auto& top = recordedMlp({});
  const auto& nested = recordedMlp({{"ACC_NESTED", "1"}});
  ASSERT_EQ(nested.result.exit_code, 0) << nested.result.err;
  EXPECT_GT(nested.rec.records.size(), top.rec.records.size());
  bool addmm_inside_linear = false;
  for (const auto& r : nested.rec.records) {
    if (r.op == "aten::addmm" && r.depth > 0) addmm_inside_linear = true;
  }
  EXPECT_TRUE(addmm_inside_linear);
  for (const auto& r : top.rec.records) EXPECT_NE(r.op, "aten::addmm") << "nested op at top level: " << r.name;
}

TEST(Recording, AccsOwnWorkIsNeverRecorded) {
  // Level 2 copies non-contiguous tensors and level 1 reduces them; with
  // every nested op recorded, the op sequence must still be the program's.
  TempDir saved;
  std::vector<std::vector<std::string>> names;
  for (const char* level : {"0", "1", "2"}) {
    TempDir dir;
    RunResult r = recordPython(testScript("noncontiguous.py"), dir.path(),
                               {{"ACC_LEVEL", level}, {"ACC_NESTED", "1"}, {"SAVE_DIR", saved.path()}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Recording rec = readRank(dir / "rank0");
    names.push_back(rec.names());
    if (std::string(level) == "2") {
      const auto relu = rec.named("aten::relu.");
      ASSERT_EQ(relu.size(), 1u);
      auto in = tensorsOf(*relu[0], Role::Input);
      ASSERT_EQ(in.size(), 1u);
      EXPECT_EQ(in[0]->strides, (std::vector<int64_t>{1, 4}));  // as the op saw it
      EXPECT_EQ(in[0]->data, readFile(saved / "xt.bin"));     // in row-major order
    }
  }
  EXPECT_EQ(names[0], names[1]);
  EXPECT_EQ(names[0], names[2]);
  EXPECT_FALSE(names[0].empty());
}

TEST(Recording, ManifestDescribesTheRun) {
  const auto& m = recordedMlp({});
  const auto& j = m.rec.manifest;
  EXPECT_EQ(j["format_version"], format::kFormatVersion);
  EXPECT_EQ(j["status"], "complete");
  EXPECT_EQ(j["rank"], 0);
  EXPECT_EQ(j["devices"], nlohmann::json::array({"cpu"}));
  // The running torch's version: major.minor as the Python's torch reports it.
  const std::string python_version =
      run({{python(), "-c", "import torch; print(torch.__version__)"}, {}, "", false, ""}).out;
  const std::string recorded = j["torch_version"].get<std::string>();
  EXPECT_EQ(majorMinor(recorded), majorMinor(python_version)) << recorded << " vs " << python_version;
  EXPECT_EQ(j["config"]["level"], 1);
  EXPECT_FALSE(j["end_time"].is_null());
  const auto& c = j["counts"];
  EXPECT_EQ(c["written"].get<uint64_t>(), m.rec.records.size());
  EXPECT_EQ(c["recorded"].get<uint64_t>(), c["written"].get<uint64_t>());
  EXPECT_EQ(c["dropped"], 0);
  EXPECT_EQ(c["lost_io"], 0);
  EXPECT_EQ(c["ops_seen"].get<uint64_t>(), c["recorded"].get<uint64_t>() + c["skipped"].get<uint64_t>());
  EXPECT_EQ(c["steps"], 4);  // three optimizer steps, then the ops after the last one
  EXPECT_NE(m.result.err.find("records written, 0 dropped"), std::string::npos) << m.result.err;
}

}  // namespace
}  // namespace acc::test
