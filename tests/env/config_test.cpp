// env::parse: defaults, every variable's accepted forms, one error line per
// rejected value, and warnings for unknown ACC_* names.
#include "env/config.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <filesystem>
#include <fstream>

#include <cstdint>
#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace acc::env {
namespace {

// A fake process environment: `lookup` and `environ` both come from `vars`.
class FakeEnv {
 public:
  FakeEnv(std::initializer_list<std::pair<const std::string, std::string>> vars) : vars_(vars) {}

  ParseResult parse() {
    entries_.clear();
    for (const auto& [name, value] : vars_) entries_.push_back(name + "=" + value);
    for (const std::string& raw : raw_entries_) entries_.push_back(raw);
    pointers_.clear();
    for (std::string& e : entries_) pointers_.push_back(e.data());
    pointers_.push_back(nullptr);
    return env::parse(lookup(), pointers_.data());
  }

  Lookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars_.find(name);
      return it == vars_.end() ? nullptr : it->second.c_str();
    };
  }

  // An environ entry the lookup does not see (e.g. "NAME" without "=").
  void addRawEntry(std::string entry) { raw_entries_.push_back(std::move(entry)); }

 private:
  std::map<std::string, std::string> vars_;
  std::vector<std::string> raw_entries_;
  std::vector<std::string> entries_;
  std::vector<char*> pointers_;
};

Config parseOk(std::initializer_list<std::pair<const std::string, std::string>> vars) {
  FakeEnv env(vars);
  ParseResult r = env.parse();
  EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors.front());
  EXPECT_TRUE(r.warnings.empty());
  return r.config;
}

TEST(ConfigTest, DefaultsWhenNothingIsSet) {
  FakeEnv env({});
  ParseResult r = env.parse();
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.errors.empty());
  EXPECT_TRUE(r.warnings.empty());
  const Config& c = r.config;
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.output_dir, "./acc_record");
  EXPECT_EQ(c.level, 1);
  EXPECT_TRUE(c.inputs);
  EXPECT_TRUE(c.outputs);
  EXPECT_EQ(c.passes, Passes::Both);
  EXPECT_TRUE(c.range_start.empty());
  EXPECT_TRUE(c.range_end.empty());
  EXPECT_TRUE(c.op_list.empty());
  EXPECT_EQ(c.skip, 0u);
  EXPECT_TRUE(c.steps.all());
  EXPECT_TRUE(c.steps.contains(0));
  EXPECT_TRUE(c.steps.contains(123456));
  EXPECT_TRUE(c.ranks.empty());
  EXPECT_EQ(c.stack, StackMode::None);
  EXPECT_FALSE(c.nested);
  EXPECT_EQ(c.buffer_mb, 256u);
  EXPECT_EQ(c.zstd_level, 1);
  EXPECT_EQ(c.frame_kb, 1024u);
  EXPECT_EQ(c.data_zstd_level, -100);
  EXPECT_EQ(c.data_threads, dataThreadsFor(usableCpus()));
  EXPECT_EQ(c.on_full, OnFull::Wait);
  EXPECT_FALSE(c.quiet);
}

TEST(ConfigTest, NullEnvironmentIsAccepted) {
  ParseResult r = env::parse([](const char*) -> const char* { return nullptr; }, nullptr);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.warnings.empty());
}

TEST(ConfigTest, LevelAcceptsZeroOneTwo) {
  EXPECT_EQ(parseOk({{"ACC_LEVEL", "0"}}).level, 0);
  EXPECT_EQ(parseOk({{"ACC_LEVEL", "1"}}).level, 1);
  EXPECT_EQ(parseOk({{"ACC_LEVEL", "2"}}).level, 2);
  EXPECT_EQ(parseOk({{"ACC_LEVEL", " 2 "}}).level, 2);  // surrounding blanks trimmed
}

TEST(ConfigTest, BooleansAcceptEveryDocumentedSpelling) {
  for (const char* yes : {"1", "true", "TRUE", "yes", "on"}) {
    Config c = parseOk({{"ACC_ENABLE", yes}, {"ACC_INPUTS", yes}, {"ACC_OUTPUTS", yes},
                        {"ACC_NESTED", yes}, {"ACC_QUIET", yes}});
    EXPECT_TRUE(c.enabled) << yes;
    EXPECT_TRUE(c.inputs) << yes;
    EXPECT_TRUE(c.outputs) << yes;
    EXPECT_TRUE(c.nested) << yes;
    EXPECT_TRUE(c.quiet) << yes;
  }
  for (const char* no : {"0", "false", "no", "off", "Off"}) {
    Config c = parseOk({{"ACC_ENABLE", no}, {"ACC_INPUTS", no}, {"ACC_OUTPUTS", no},
                        {"ACC_NESTED", no}, {"ACC_QUIET", no}});
    EXPECT_FALSE(c.enabled) << no;
    EXPECT_FALSE(c.inputs) << no;
    EXPECT_FALSE(c.outputs) << no;
    EXPECT_FALSE(c.nested) << no;
    EXPECT_FALSE(c.quiet) << no;
  }
}

TEST(ConfigTest, PassesForwardBackwardOrBoth) {
  Config fwd = parseOk({{"ACC_PASSES", "fwd"}});
  EXPECT_EQ(fwd.passes, Passes::Forward);
  EXPECT_TRUE(fwd.records(Passes::Forward));
  EXPECT_FALSE(fwd.records(Passes::Backward));

  Config bwd = parseOk({{"ACC_PASSES", "bwd"}});
  EXPECT_EQ(bwd.passes, Passes::Backward);
  EXPECT_FALSE(bwd.records(Passes::Forward));
  EXPECT_TRUE(bwd.records(Passes::Backward));

  EXPECT_EQ(parseOk({{"ACC_PASSES", "fwd,bwd"}}).passes, Passes::Both);
  EXPECT_EQ(parseOk({{"ACC_PASSES", "BWD, FWD"}}).passes, Passes::Both);
}

TEST(ConfigTest, OpRangeWithStartOnly) {
  Config c = parseOk({{"ACC_OP_RANGE", "aten::conv2d.6.fwd,"}});
  EXPECT_EQ(c.range_start, "aten::conv2d.6.fwd");
  EXPECT_EQ(c.range_end, "");
}

TEST(ConfigTest, OpRangeWithEndOnly) {
  Config c = parseOk({{"ACC_OP_RANGE", ",aten::relu.3.bwd"}});
  EXPECT_EQ(c.range_start, "");
  EXPECT_EQ(c.range_end, "aten::relu.3.bwd");
}

TEST(ConfigTest, OpRangeAcceptsBackwardNodeSuffixAndOverloadNames) {
  Config c = parseOk({{"ACC_OP_RANGE", "aten::linear.5.bwd.2, aten::add.Tensor.17.fwd"}});
  EXPECT_EQ(c.range_start, "aten::linear.5.bwd.2");
  EXPECT_EQ(c.range_end, "aten::add.Tensor.17.fwd");
}

TEST(ConfigTest, OpListIsLowerCasedAndSplit) {
  Config c = parseOk({{"ACC_OP_LIST", "ReLU,Conv"}});
  EXPECT_EQ(c.op_list, (std::vector<std::string>{"relu", "conv"}));
  c = parseOk({{"ACC_OP_LIST", " aten::MM "}});
  EXPECT_EQ(c.op_list, (std::vector<std::string>{"aten::mm"}));
}

TEST(ConfigTest, ModulesAreSplitAndKeptAsWritten) {
  Config c = parseOk({{"ACC_MODULES", "enc.layers.0, head"}});
  EXPECT_EQ(c.modules, (std::vector<std::string>{"enc.layers.0", "head"}));
  EXPECT_TRUE(parseOk({}).modules.empty());
}

TEST(ConfigTest, SkipAcceptsNonNegativeIntegers) {
  EXPECT_EQ(parseOk({{"ACC_SKIP", "0"}}).skip, 0u);
  EXPECT_EQ(parseOk({{"ACC_SKIP", "7"}}).skip, 7u);
}

TEST(ConfigTest, StepsListAndInclusiveRanges) {
  Config c = parseOk({{"ACC_STEPS", "0,3-5"}});
  EXPECT_FALSE(c.steps.all());
  ASSERT_EQ(c.steps.ranges.size(), 2u);
  EXPECT_EQ(c.steps.ranges[0], (StepRange{0, 0, 1}));
  EXPECT_EQ(c.steps.ranges[1], (StepRange{3, 5, 1}));
  for (int64_t step : {0, 3, 4, 5}) EXPECT_TRUE(c.steps.contains(step)) << step;
  for (int64_t step : {1, 2, 6, 100}) EXPECT_FALSE(c.steps.contains(step)) << step;
}

TEST(ConfigTest, StepsTakeStridesAndOpenRanges) {
  Config c = parseOk({{"ACC_STEPS", "0-30000:1000,5000-,7,100-:50"}});
  ASSERT_EQ(c.steps.ranges.size(), 4u);
  EXPECT_EQ(c.steps.ranges[0], (StepRange{0, 30000, 1000}));
  EXPECT_EQ(c.steps.ranges[1], (StepRange{5000, INT64_MAX, 1}));
  EXPECT_EQ(c.steps.ranges[3], (StepRange{100, INT64_MAX, 50}));
  for (int64_t step : {0, 1000, 30000, 7, 100, 150, 5000, 5001, 999999}) EXPECT_TRUE(c.steps.contains(step)) << step;
  for (int64_t step : {1, 999, 120, 4999}) EXPECT_FALSE(c.steps.contains(step)) << step;
  EXPECT_EQ(c.steps.last(), INT64_MAX);
  EXPECT_EQ(parseOk({{"ACC_STEPS", "0-10:5,3"}}).steps.last(), 10);
  EXPECT_EQ(parseOk({}).steps.last(), INT64_MAX);
}

TEST(ConfigTest, RanksList) {
  EXPECT_EQ(parseOk({{"ACC_RANKS", "0,2"}}).ranks, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(parseOk({{"ACC_RANKS", "5"}}).ranks, (std::vector<int64_t>{5}));
}

TEST(ConfigTest, StackModes) {
  Config none = parseOk({{"ACC_STACK", "none"}});
  EXPECT_EQ(none.stack, StackMode::None);
  EXPECT_FALSE(none.stackPython());
  EXPECT_FALSE(none.stackNative());

  Config python = parseOk({{"ACC_STACK", "python"}});
  EXPECT_EQ(python.stack, StackMode::Python);
  EXPECT_TRUE(python.stackPython());
  EXPECT_FALSE(python.stackNative());

  Config native = parseOk({{"ACC_STACK", "Native"}});
  EXPECT_EQ(native.stack, StackMode::Native);
  EXPECT_FALSE(native.stackPython());
  EXPECT_TRUE(native.stackNative());

  Config both = parseOk({{"ACC_STACK", "both"}});
  EXPECT_EQ(both.stack, StackMode::Both);
  EXPECT_TRUE(both.stackPython());
  EXPECT_TRUE(both.stackNative());
}

TEST(ConfigTest, NumericLimitsAtTheirBounds) {
  Config low = parseOk({{"ACC_BUFFER_MB", "1"},
                        {"ACC_ZSTD_LEVEL", "1"},
                        {"ACC_DATA_ZSTD_LEVEL", "-100"},
                        {"ACC_FRAME_KB", "16"},
                        {"ACC_DATA_THREADS", "1"}});
  EXPECT_EQ(low.buffer_mb, 1u);
  EXPECT_EQ(low.zstd_level, 1);
  EXPECT_EQ(low.data_zstd_level, -100);
  EXPECT_EQ(low.frame_kb, 16u);
  EXPECT_EQ(low.data_threads, 1);
  Config high = parseOk({{"ACC_BUFFER_MB", "65536"},
                         {"ACC_ZSTD_LEVEL", "19"},
                         {"ACC_DATA_ZSTD_LEVEL", "19"},
                         {"ACC_FRAME_KB", "65536"},
                         {"ACC_DATA_THREADS", "64"}});
  EXPECT_EQ(high.buffer_mb, 65536u);
  EXPECT_EQ(high.zstd_level, 19);
  EXPECT_EQ(high.data_zstd_level, 19);
  EXPECT_EQ(high.frame_kb, 65536u);
  EXPECT_EQ(high.data_threads, 64);
}

// ACC_DATA_THREADS=auto (the default): a compressing helper only where a CPU
// is left for it, counted from the process's affinity mask.
TEST(ConfigTest, DataThreadsByDefaultLeaveACpuToTheProgram) {
  EXPECT_EQ(dataThreadsFor(1), 1);
  EXPECT_EQ(dataThreadsFor(2), 1);
  EXPECT_EQ(dataThreadsFor(3), 2);
  EXPECT_EQ(dataThreadsFor(64), 2);
  EXPECT_EQ(parseOk({{"ACC_DATA_THREADS", "auto"}}).data_threads, dataThreadsFor(usableCpus()));
  EXPECT_EQ(parseOk({{"ACC_DATA_THREADS", "Auto"}}).data_threads, dataThreadsFor(usableCpus()));
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(usableCpus(), CPU_COUNT(&all));
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  EXPECT_EQ(usableCpus(), 1);
  EXPECT_EQ(parseOk({}).data_threads, 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
}

TEST(ConfigTest, OnFullWaitOrDrop) {
  EXPECT_EQ(parseOk({{"ACC_ON_FULL", "wait"}}).on_full, OnFull::Wait);
  EXPECT_EQ(parseOk({{"ACC_ON_FULL", "drop"}}).on_full, OnFull::Drop);
  EXPECT_EQ(parseOk({{"ACC_ON_FULL", "DROP"}}).on_full, OnFull::Drop);
}

TEST(ConfigTest, OutputDir) {
  EXPECT_EQ(parseOk({{"ACC_OUTPUT_DIR", "/tmp/somewhere"}}).output_dir, "/tmp/somewhere");
}

// Every variable rejects at least one value with exactly one error line that
// names the variable, shows the value and says what is allowed.
struct InvalidCase {
  const char* name;
  const char* value;
};

class ConfigInvalidValueTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(ConfigInvalidValueTest, ProducesOneErrorLine) {
  const InvalidCase& p = GetParam();
  FakeEnv env({{p.name, p.value}});
  ParseResult r = env.parse();
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.errors.size(), 1u);
  const std::string& line = r.errors[0];
  EXPECT_NE(line.find(p.name), std::string::npos) << line;
  EXPECT_NE(line.find(std::string("=\"") + p.value + "\""), std::string::npos) << line;
  EXPECT_NE(line.find("allowed"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_TRUE(r.warnings.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Parse, ConfigInvalidValueTest,
    ::testing::Values(InvalidCase{"ACC_ENABLE", "maybe"}, InvalidCase{"ACC_OUTPUT_DIR", ""},
                      InvalidCase{"ACC_OUTPUT_DIR", "   "}, InvalidCase{"ACC_LEVEL", "3"},
                      InvalidCase{"ACC_LEVEL", "-1"}, InvalidCase{"ACC_LEVEL", "one"},
                      InvalidCase{"ACC_INPUTS", "2"}, InvalidCase{"ACC_OUTPUTS", "nope"},
                      InvalidCase{"ACC_PASSES", "forward"}, InvalidCase{"ACC_PASSES", "fwd,"},
                      InvalidCase{"ACC_OP_RANGE", "foo,bar"},
                      InvalidCase{"ACC_OP_RANGE", "aten::conv2d.6.fwd"},
                      InvalidCase{"ACC_OP_RANGE", "aten::conv2d.fwd,"},
                      InvalidCase{"ACC_OP_RANGE", "aten::conv2d.x.fwd,"},
                      InvalidCase{"ACC_OP_RANGE", ",aten::relu.3.bwdx"},
                      InvalidCase{"ACC_OP_RANGE", "a.1.fwd,b.2.fwd,c.3.fwd"},
                      InvalidCase{"ACC_OP_LIST", ""}, InvalidCase{"ACC_OP_LIST", "relu,,conv"},
                      InvalidCase{"ACC_MODULES", ""}, InvalidCase{"ACC_MODULES", "enc..norm"},
                      InvalidCase{"ACC_MODULES", ".head"}, InvalidCase{"ACC_MODULES", "enc.,head"},
                      InvalidCase{"ACC_MODULES", "my block"},
                      InvalidCase{"ACC_SKIP", "-1"}, InvalidCase{"ACC_SKIP", "1.5"},
                      InvalidCase{"ACC_SKIP", "99999999999999999999"},
                      InvalidCase{"ACC_STEPS", "5-3"}, InvalidCase{"ACC_STEPS", "x"},
                      InvalidCase{"ACC_STEPS", "1,,2"}, InvalidCase{"ACC_STEPS", "-2"},
                      InvalidCase{"ACC_STEPS", "0-10:0"}, InvalidCase{"ACC_STEPS", "5:2"},
                      InvalidCase{"ACC_STEPS", "0-10:"}, InvalidCase{"ACC_STEPS", "-:3"},
                      InvalidCase{"ACC_RANKS", "a"}, InvalidCase{"ACC_RANKS", "-1"},
                      InvalidCase{"ACC_STACK", "all"}, InvalidCase{"ACC_NESTED", "2"}, InvalidCase{"ACC_DEDUP", "2"},
                      InvalidCase{"ACC_BUFFER_MB", "0"}, InvalidCase{"ACC_BUFFER_MB", "65537"},
                      InvalidCase{"ACC_DEVICE_BATCH", "0"}, InvalidCase{"ACC_DEVICE_BATCH", "many"},
                      InvalidCase{"ACC_RECORD_BATCH", "0"}, InvalidCase{"ACC_RECORD_BATCH", "65"},
                      InvalidCase{"ACC_ZSTD_LEVEL", "0"}, InvalidCase{"ACC_ZSTD_LEVEL", "20"},
                      InvalidCase{"ACC_DATA_ZSTD_LEVEL", "0"}, InvalidCase{"ACC_DATA_ZSTD_LEVEL", "-101"},
                      InvalidCase{"ACC_DATA_ZSTD_LEVEL", "20"}, InvalidCase{"ACC_DATA_ZSTD_LEVEL", "fast"},
                      InvalidCase{"ACC_FRAME_KB", "15"}, InvalidCase{"ACC_FRAME_KB", "65537"},
                      InvalidCase{"ACC_DATA_THREADS", "0"}, InvalidCase{"ACC_DATA_THREADS", "65"},
                      InvalidCase{"ACC_ON_FULL", "block"}, InvalidCase{"ACC_QUIET", "loud"},
                      InvalidCase{"ACC_EAGER", "lazy"}, InvalidCase{"ACC_GRADS", "2"},
                      InvalidCase{"ACC_WATCH", "nan"}, InvalidCase{"ACC_WATCH", "inf"},
                      InvalidCase{"ACC_WATCH_CONTEXT", "-1"}, InvalidCase{"ACC_WATCH_CONTEXT", "100001"},
                      InvalidCase{"ACC_WATCH_ABORT", "2"}, InvalidCase{"ACC_RANDOM", ""},
                      InvalidCase{"ACC_RANDOM", "replay"}, InvalidCase{"ACC_RANDOM", "/nonexistent/acc-reference"},
                      InvalidCase{"ACC_OVERRIDE", ""}, InvalidCase{"ACC_OVERRIDE", "aten::"},
                      InvalidCase{"ACC_OVERRIDE", "gelu@x"}, InvalidCase{"ACC_OVERRIDE", "gelu@3-1"},
                      InvalidCase{"ACC_OVERRIDE", "gelu@1-5:2"}, InvalidCase{"ACC_OVERRIDE", "ge lu"},
                      InvalidCase{"ACC_OVERRIDE", "gelu,,relu"}, InvalidCase{"ACC_OVERRIDE", "aten::add."},
                      InvalidCase{"ACC_REFERENCE", ""}, InvalidCase{"ACC_REFERENCE", "/nonexistent/acc-reference"},
                      InvalidCase{"ACC_REFERENCE_CONTEXT", "-1"}, InvalidCase{"ACC_REFERENCE_CONTEXT", "1001"},
                      InvalidCase{"ACC_REFERENCE_MAX", "0"}, InvalidCase{"ACC_REFERENCE_MAX", "all"},
                      InvalidCase{"ACC_REFERENCE_THRESHOLDS", ""}),
    [](const ::testing::TestParamInfo<InvalidCase>& info) {
      return std::string(info.param.name).substr(4) + "_" + std::to_string(info.index);
    });

TEST(ConfigTest, EveryDocumentedVariableHasAnInvalidCase) {
  // Guards the list above: a new variable must get an invalid-value case.
  std::vector<std::string> covered;
  for (const char* n :
       {"ACC_ENABLE", "ACC_OUTPUT_DIR", "ACC_LEVEL", "ACC_INPUTS", "ACC_OUTPUTS", "ACC_PASSES",
        "ACC_OP_RANGE", "ACC_OP_LIST", "ACC_MODULES", "ACC_SKIP", "ACC_STEPS", "ACC_RANKS", "ACC_STACK",
        "ACC_NESTED", "ACC_DEDUP", "ACC_BUFFER_MB", "ACC_DEVICE_BATCH", "ACC_RECORD_BATCH", "ACC_ZSTD_LEVEL", "ACC_DATA_ZSTD_LEVEL", "ACC_FRAME_KB", "ACC_DATA_THREADS", "ACC_ON_FULL",
        "ACC_QUIET", "ACC_EAGER", "ACC_GRADS", "ACC_WATCH", "ACC_WATCH_CONTEXT", "ACC_WATCH_ABORT",
        "ACC_RANDOM", "ACC_OVERRIDE", "ACC_REFERENCE", "ACC_REFERENCE_CONTEXT", "ACC_REFERENCE_MAX",
        "ACC_REFERENCE_THRESHOLDS"}) {
    covered.emplace_back(n);
  }
  for (const Variable& v : variables()) {
    EXPECT_NE(std::find(covered.begin(), covered.end(), v.name), covered.end()) << v.name;
    EXPECT_NE(std::string(v.allowed), "") << v.name;
  }
  EXPECT_EQ(variables().size(), covered.size());
}

TEST(ConfigTest, RandomSettings) {
  EXPECT_EQ(FakeEnv({}).parse().config.random, Random::Off);
  EXPECT_EQ(FakeEnv({{"ACC_RANDOM", "Save"}}).parse().config.random, Random::Save);
  EXPECT_EQ(FakeEnv({{"ACC_RANDOM", "off"}}).parse().config.random, Random::Off);
  // A recording made with ACC_RANDOM=save: its directory or a rank's.
  const std::string dir = ::testing::TempDir() + "/acc-random-config";
  std::filesystem::create_directories(dir + "/rank0");
  std::ofstream(dir + "/rank0/random.acc") << "x";
  for (const std::string& source : {dir, dir + "/rank0"}) {
    ParseResult r = FakeEnv({{"ACC_RANDOM", source}}).parse();
    ASSERT_TRUE(r.ok()) << r.errors.front();
    EXPECT_EQ(r.config.random, Random::Replay);
    EXPECT_EQ(r.config.random_source, source);
  }
  // The directory this run records into cannot be its source.
  for (const std::string& source : {dir, dir + "/rank0"}) {
    ParseResult same = FakeEnv({{"ACC_RANDOM", source}, {"ACC_OUTPUT_DIR", dir}}).parse();
    ASSERT_EQ(same.errors.size(), 1u) << source;
    EXPECT_NE(same.errors[0].find("is ACC_OUTPUT_DIR itself"), std::string::npos) << same.errors[0];
  }
  std::filesystem::remove_all(dir);
}

TEST(ConfigTest, OverrideSettings) {
  EXPECT_TRUE(FakeEnv({}).parse().config.overrides.empty());
  ParseResult r = FakeEnv({{"ACC_OVERRIDE", " gelu, aten::gelu_backward@2-4 ,aten::add.Tensor@3, my_ops::f@5-"}}).parse();
  ASSERT_TRUE(r.ok()) << r.errors.front();
  const std::vector<OverrideOp>& o = r.config.overrides;
  ASSERT_EQ(o.size(), 4u);
  EXPECT_EQ(o[0].op, "aten::gelu");  // aten's when no namespace is given
  EXPECT_EQ(o[0].overload, "");
  EXPECT_TRUE(o[0].steps.all());
  EXPECT_EQ(o[1].op, "aten::gelu_backward");
  EXPECT_EQ(o[1].steps.ranges, (std::vector<StepRange>{{2, 4, 1}}));
  EXPECT_EQ(o[2].op, "aten::add");
  EXPECT_EQ(o[2].overload, "Tensor");
  EXPECT_TRUE(o[2].steps.contains(3));
  EXPECT_FALSE(o[2].steps.contains(4));
  EXPECT_EQ(o[3].op, "my_ops::f");
  EXPECT_TRUE(o[3].steps.contains(1000000));
  EXPECT_FALSE(o[3].steps.contains(4));
  // Written back as the manifest and acc's lines show them.
  std::vector<std::string> texts;
  for (const OverrideOp& op : o) texts.push_back(op.text());
  EXPECT_EQ(texts, (std::vector<std::string>{"aten::gelu", "aten::gelu_backward@2-4", "aten::add.Tensor@3",
                                             "my_ops::f@5-"}));
}

TEST(ConfigTest, ReferenceSettings) {
  ParseResult off = FakeEnv({}).parse();
  EXPECT_TRUE(off.config.reference.empty());
  EXPECT_EQ(off.config.reference_context, 3u);
  EXPECT_EQ(off.config.reference_max, 1u);
  // A recording: its directory or a rank's.
  const std::string dir = ::testing::TempDir() + "/acc-reference-config";
  std::filesystem::create_directories(dir + "/rank0");
  std::ofstream(dir + "/rank0/records.acc") << "x";
  for (const std::string& source : {dir, dir + "/rank0"}) {
    ParseResult r = FakeEnv({{"ACC_REFERENCE", source},
                             {"ACC_REFERENCE_CONTEXT", "0"},
                             {"ACC_REFERENCE_MAX", "4"},
                             {"ACC_REFERENCE_THRESHOLDS", "--fail-rel-l2 bf16=0.02"}})
                        .parse();
    ASSERT_TRUE(r.ok()) << r.errors.front();
    EXPECT_EQ(r.config.reference, source);
    EXPECT_EQ(r.config.reference_context, 0u);
    EXPECT_EQ(r.config.reference_max, 4u);
    EXPECT_EQ(r.config.reference_thresholds, "--fail-rel-l2 bf16=0.02");
  }
  // This run's own directory; settings it cannot judge with; the watch.
  ParseResult same = FakeEnv({{"ACC_REFERENCE", dir}, {"ACC_OUTPUT_DIR", dir}}).parse();
  ASSERT_EQ(same.errors.size(), 1u);
  EXPECT_NE(same.errors[0].find("is ACC_OUTPUT_DIR itself"), std::string::npos) << same.errors[0];
  ParseResult conflicts = FakeEnv({{"ACC_REFERENCE", dir}, {"ACC_LEVEL", "0"}, {"ACC_OUTPUTS", "0"}}).parse();
  ASSERT_EQ(conflicts.errors.size(), 2u);
  for (const std::string& e : conflicts.errors) EXPECT_NE(e.find("ACC_REFERENCE cannot be combined"), std::string::npos) << e;
  ParseResult watch = FakeEnv({{"ACC_REFERENCE", dir}, {"ACC_WATCH", "naninf"}}).parse();
  ASSERT_EQ(watch.errors.size(), 1u);
  EXPECT_NE(watch.errors[0].find("ACC_REFERENCE cannot be combined with ACC_WATCH=naninf"), std::string::npos);
  // Its settings without it.
  ParseResult alone = FakeEnv({{"ACC_REFERENCE_MAX", "2"}}).parse();
  ASSERT_EQ(alone.errors.size(), 1u);
  EXPECT_NE(alone.errors[0].find("ACC_REFERENCE_MAX is set but ACC_REFERENCE is not"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(ConfigTest, WatchSettings) {
  ParseResult off = FakeEnv({}).parse();
  EXPECT_EQ(off.config.watch, Watch::Off);
  EXPECT_EQ(off.config.watch_context, 64u);
  EXPECT_FALSE(off.config.watch_abort);
  ParseResult on = FakeEnv({{"ACC_WATCH", "NanInf"}, {"ACC_WATCH_CONTEXT", "0"}, {"ACC_WATCH_ABORT", "yes"}}).parse();
  ASSERT_TRUE(on.ok()) << on.errors.front();
  EXPECT_EQ(on.config.watch, Watch::NanInf);
  EXPECT_EQ(on.config.watch_context, 0u);
  EXPECT_TRUE(on.config.watch_abort);
  // Settings the watch cannot honour: one line each.
  ParseResult conflicts =
      FakeEnv({{"ACC_WATCH", "naninf"}, {"ACC_INPUTS", "0"}, {"ACC_OUTPUTS", "0"}, {"ACC_GRADS", "1"}}).parse();
  ASSERT_EQ(conflicts.errors.size(), 3u);
  for (const std::string& e : conflicts.errors) EXPECT_NE(e.find("cannot be combined with ACC_WATCH=naninf"), std::string::npos) << e;
  // Its own settings without it.
  ParseResult alone = FakeEnv({{"ACC_WATCH_CONTEXT", "8"}}).parse();
  ASSERT_EQ(alone.errors.size(), 1u);
  EXPECT_NE(alone.errors[0].find("ACC_WATCH_CONTEXT is set but ACC_WATCH is not naninf"), std::string::npos);
  EXPECT_TRUE(FakeEnv({{"ACC_WATCH", "off"}}).parse().ok());
}

TEST(ConfigTest, SeveralInvalidValuesGiveOneLineEach) {
  FakeEnv env({{"ACC_LEVEL", "3"}, {"ACC_STACK", "all"}, {"ACC_SKIP", "2"}});
  ParseResult r = env.parse();
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.config.skip, 2u);  // valid variables are still applied
}

TEST(ConfigTest, UnknownAccVariableWarnsOnceWithoutError) {
  FakeEnv env({{"ACC_LEVLE", "2"}, {"ACC_LEVEL", "2"}, {"PATH", "/usr/bin"}});
  ParseResult r = env.parse();
  EXPECT_TRUE(r.ok());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("ACC_LEVLE"), std::string::npos) << r.warnings[0];
  EXPECT_EQ(r.config.level, 2);
}

TEST(ConfigTest, UnknownVariableWithoutValueIsNamed) {
  FakeEnv env({});
  env.addRawEntry("ACC_BOGUS");
  ParseResult r = env.parse();
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("ACC_BOGUS"), std::string::npos) << r.warnings[0];
}

TEST(ConfigTest, ScriptVariableAccPythonIsNotUnknown) {
  FakeEnv env({{"ACC_PYTHON", "/usr/bin/python3"}});
  ParseResult r = env.parse();
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.warnings.empty());
}

TEST(ConfigTest, ProcessRankReadsRank) {
  EXPECT_EQ(processRank(FakeEnv({}).lookup()), 0);
  EXPECT_EQ(processRank(FakeEnv({{"RANK", "3"}}).lookup()), 3);
  EXPECT_EQ(processRank(FakeEnv({{"RANK", " 7 "}}).lookup()), 7);
  EXPECT_EQ(processRank(FakeEnv({{"RANK", "garbage"}}).lookup()), 0);
  EXPECT_EQ(processRank(FakeEnv({{"ACC_RANKS", "4"}}).lookup()), 0);
}

TEST(ConfigTest, NamesOfPassesAndStackModes) {
  EXPECT_STREQ(passesName(Passes::Forward), "fwd");
  EXPECT_STREQ(passesName(Passes::Backward), "bwd");
  EXPECT_STREQ(passesName(Passes::Both), "fwd,bwd");
  EXPECT_STREQ(stackModeName(StackMode::None), "none");
  EXPECT_STREQ(stackModeName(StackMode::Python), "python");
  EXPECT_STREQ(stackModeName(StackMode::Native), "native");
  EXPECT_STREQ(stackModeName(StackMode::Both), "both");
}

}  // namespace
}  // namespace acc::env
