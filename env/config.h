// The recorder's configuration, read only from ACC_* environment variables.
// This library does not depend on torch: the preload shim validates the
// configuration before it decides to load the torch-linked recorder core.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace acc::env {

enum class Passes : uint8_t { Forward = 1, Backward = 2, Both = 3 };
enum class StackMode : uint8_t { None = 0, Python = 1, Native = 2, Both = 3 };
enum class OnFull : uint8_t { Wait, Drop };
enum class Watch : uint8_t { Off, NanInf };
enum class Random : uint8_t { Off, Save, Replay };

// Steps first, first + stride, ... up to last (inclusive; INT64_MAX: open).
struct StepRange {
  int64_t first = 0, last = INT64_MAX, stride = 1;
  bool operator==(const StepRange& o) const { return first == o.first && last == o.last && stride == o.stride; }
};

// ACC_STEPS: training-step numbers; empty means every step.
struct StepSet {
  std::vector<StepRange> ranges;
  bool contains(int64_t step) const;
  bool all() const { return ranges.empty(); }
  int64_t last() const;  // the last step selected; INT64_MAX when open or all
};

// ACC_OVERRIDE: one op computed in float64 on the CPU
// (recorder/override/op_override.h), in the steps given (empty: every step).
struct OverrideOp {
  std::string op;        // "aten::gelu": every overload
  std::string overload;  // "Tensor" of "aten::add.Tensor"; empty: any
  StepSet steps;
  std::string text() const;  // as written back: aten::add.Tensor@3-5
};

// ACC_DATA_THREADS' default for a process that may run on `cpus` CPUs: a
// helper compresses beside the writer only where a CPU is left for it. On
// 2 CPUs, one training thread and the writer already take both, and a
// helper made level 2 slower (resnet18 + AdamW: 2.04x and 2.08x a step
// against 1.73x and 1.84x with none; docs/guide/performance.md).
int dataThreadsFor(int cpus);
// CPUs this process may run on (its affinity mask; a container's limit).
int usableCpus();

struct Config {
  bool enabled = true;
  std::string output_dir = "./acc_record";
  int level = 1;
  bool inputs = true;
  bool outputs = true;
  Passes passes = Passes::Both;
  std::string range_start;  // record name; empty: from the start of each step
  std::string range_end;    // record name, excluded; empty: to the end
  std::vector<std::string> op_list;  // lower-case substrings; empty: every op
  std::vector<std::string> modules;  // module path prefixes (whole components); empty: every op
  uint64_t skip = 0;
  StepSet steps;
  std::vector<int64_t> ranks;  // empty: every rank
  StackMode stack = StackMode::None;
  bool nested = false;
  bool dedup = true;  // each tensor content recorded once (recorder/capture/content_store.h)
  uint64_t buffer_mb = 256;
  // Device tensors whose statistics are computed together
  // (recorder/capture/device/stats_batch.h); 1: each alone, as soon as it is captured.
  uint64_t device_batch = 512;
  // Op records a thread hands to the writer together
  // (recorder/write/record_batch.h); 1: each alone.
  uint64_t record_batch = 8;
  int zstd_level = 1;        // record frames
  int data_zstd_level = -100;  // data frames: zstd's fastest search, literals Huffman-coded (format/frame.cpp)
  uint64_t frame_kb = 1024;
  // Threads compressing data frames, the writer's own included
  // (format/data_frame_pipeline.h): level 2's bytes were its one zstd's wait.
  // By default dataThreadsFor(the CPUs this process may run on).
  int data_threads = dataThreadsFor(usableCpus());
  OnFull on_full = OnFull::Wait;
  bool quiet = false;
  bool eager = false;  // torch.compile turned off (TORCH_COMPILE_DISABLE) so every op is recorded
  bool grads = false;  // a grad::{parameter} record per parameter at each optimizer step
  // ACC_WATCH=naninf: only the first op that makes a non-finite value from
  // finite inputs is written (level 2), with the metadata of the
  // watch_context ops before it (recorder/watch/watch.h).
  Watch watch = Watch::Off;
  uint64_t watch_context = 64;
  bool watch_abort = false;  // exit once it is found
  // ACC_RANDOM (recorder/random/random_tape.h): save the values random ops draw
  // (random.acc), or replay those of the recording in random_source.
  Random random = Random::Off;
  std::string random_source;  // Replay: the reference recording's directory
  // ACC_OVERRIDE: ops whose results acc replaces by float64 CPU ones
  // (changes numbers on purpose).
  std::vector<OverrideOp> overrides;
  // ACC_REFERENCE (recorder/reference/reference.h): a recording of the same
  // program each record is judged against as it is made; the first
  // reference_max origins are written at level 2 with reference_context ops
  // before and after them. Empty: off.
  std::string reference;
  uint64_t reference_context = 3;
  uint64_t reference_max = 1;
  std::string reference_thresholds;  // compare's threshold options; empty: compare's defaults

  bool records(Passes pass) const {
    return (static_cast<uint8_t>(passes) & static_cast<uint8_t>(pass)) != 0;
  }
  bool stackPython() const { return (static_cast<uint8_t>(stack) & 1) != 0; }
  bool stackNative() const { return (static_cast<uint8_t>(stack) & 2) != 0; }
};

// One documented variable: used for validation, unknown-name warnings and docs.
struct Variable {
  const char* name;
  const char* default_value;
  const char* allowed;
};
const std::vector<Variable>& variables();

struct ParseResult {
  Config config;
  std::vector<std::string> errors;    // one line each: variable, value, allowed
  std::vector<std::string> warnings;  // unknown ACC_* names
  bool ok() const { return errors.empty(); }
};

using Lookup = std::function<const char*(const char*)>;

// Parses every known variable through `lookup` (getenv in production) and
// checks `environment` (NAME=VALUE strings) for unknown ACC_* names.
ParseResult parse(const Lookup& lookup, char** environment);
ParseResult parseProcessEnvironment();

// Rank of this process as torchrun reports it (RANK), 0 when unset.
int64_t processRank(const Lookup& lookup);

const char* passesName(Passes passes);
const char* stackModeName(StackMode mode);
const char* watchName(Watch watch);
const char* randomName(Random random);

// The file of a rank directory that holds what ACC_RANDOM=save drew.
inline constexpr const char* kRandomFile = "random.acc";
// The file of a rank directory that holds its records.
inline constexpr const char* kRecordsFile = "records.acc";

// Whether `dir` is a rank directory holding `file`, or a recording with
// such a rank directory.
bool holdsRankFile(const std::string& dir, const char* file);
// Rank `rank`'s `file` in a recording (dir/rank{R}/file) or a rank
// directory (dir/file); "" when neither can be opened.
std::string rankFile(const std::string& dir, int64_t rank, const char* file);

}  // namespace acc::env
