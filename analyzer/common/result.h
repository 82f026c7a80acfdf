// The outcome of comparing two recordings: what `compare` computes and what
// every report (terminal, summary.json, report.csv, report.xlsx, report.html)
// presents. Metrics only: tensor data never lives here, so the result stays
// small however large the recordings are.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/read/numeric_settings.h"
#include "format/record.h"
#include "replay/pool.h"

namespace acc::analyzer {

enum class Verdict : uint8_t { Pass = 0, Warn = 1, Fail = 2 };
const char* verdictName(Verdict v);

// Metrics of one tensor pair (docs/METRICS.md gives every formula). DIR0 is
// the reference (bench), DIR1 the device under test.
struct TensorMetrics {
  bool compared = false;   // false when `mismatch` says why not
  std::string mismatch;    // e.g. "shape [2, 3] vs [2, 4]", "missing in DIR1"
  bool from_stats = false; // level 1: compared on statistics, not elements
  double cosine = 1;
  double max_abs = 0;
  double max_rel = 0;
  double mean_abs = 0;
  double rmse = 0;
  double rel_l2 = 0;
  double within_1e3 = 1;   // share of elements with relative error <= 1/1000
  double within_5e3 = 1;   // ... <= 5/1000
  double max_ulp = 0;      // in ULPs of DIR1's dtype
  double sign_agree = 1;   // share of elements whose signs (> 0, < 0, 0, NaN) agree: msprobe's grad_probe
  uint64_t nan_mismatch = 0;  // positions NaN on one side only
  uint64_t inf_mismatch = 0;  // positions +-Inf on one side only (or of other sign)
  // Level 1 (from_stats): metrics that statistics cannot give (cosine,
  // max_rel, the within ratios, max_ulp) are NaN; the others are lower
  // bounds. stat_error is the level-1 error the verdict uses, and
  // checksum_equal says the contents are bit-identical.
  double stat_error = 0;
  bool checksum_equal = false;
};

struct TensorPair {
  format::Role role = format::Role::Input;
  uint32_t position = 0;
  uint32_t item = 0;
  format::Dtype dtype0 = format::Dtype::Unknown, dtype1 = format::Dtype::Unknown;
  std::vector<int64_t> shape0, shape1;
  bool has_stats0 = false, has_stats1 = false;
  format::Stats stats0, stats1;
  TensorMetrics metrics;
  Verdict verdict = Verdict::Pass;
  std::string reason;        // why the verdict, e.g. "rel_l2 1.2e-03 > 1e-04 (float32)"
  bool uninitialized = false;  // holds uninitialized memory: not judged (docs/METRICS.md)
  // A matmul or conv output the runs' settings let compute at a reduced
  // precision (TF32): that Precision's value (thresholds.h), 0 when none.
  // Set while a record is judged, not kept in reports.
  uint8_t allowed_precision = 0;
};

// What running a record's op again on its own recorded inputs said
// (docs/METRICS.md, "Replay"). Errors are rel_l2 of the worst produced
// tensor; NaN when unknown.
enum class ReplayState : uint8_t {
  NotTried = 0,
  Confirmed,      // the kernel under test does not reproduce its own output: its kernel is wrong
  Amplifies,      // reproduced: the op amplifies the error its inputs carry
  Reproduced,     // check: the recorded output agrees with the replay
  NotReplayable,  // random, collective, no schema, no CPU kernel, ...: `reason`
  MayAmplify,     // level 1 (no replay): a division, or an output summing many values, whose
                  // inputs' error or summation order may explain its outputs' (`reason`)
};
// "", "confirmed", "amplifies", "reproduced", "not replayable", "may amplify"
const char* replayStateName(ReplayState s);

struct ReplayCheck {
  ReplayState state = ReplayState::NotTried;
  std::string reason;  // not replayable: why
  double error1 = std::numeric_limits<double>::quiet_NaN();        // DIR1's output vs its float64 replay
  double error1_dtype = std::numeric_limits<double>::quiet_NaN();  // ... vs its replay in the recorded dtypes
  double cpu_error = std::numeric_limits<double>::quiet_NaN();     // a CPU kernel's error in DIR1's dtypes
  double error0 = std::numeric_limits<double>::quiet_NaN();        // DIR0's output vs its float64 replay
  double tolerance = std::numeric_limits<double>::quiet_NaN();     // error1 above it: the kernel is wrong
  // Judged at a reduced precision the run's settings allow (TF32, bf16):
  std::string precision;          // its name, "" at the recorded dtype's
  std::string precision_setting;  // the setting that allows it
  double precision_error = std::numeric_limits<double>::quiet_NaN();  // float64 on rounded factors vs float64
};

struct RecordComparison {
  std::string name;          // as in DIR0 (DIR1's name when it differs: name1)
  std::string name1;
  std::string op;
  std::string grad_fn;
  bool has_module = false;  // format 5, Python programs: DIR0's module path (DIR1's when DIR0 has none)
  std::string module;
  format::Pass pass = format::Pass::Forward;
  int64_t step = 0;
  int64_t rank = 0;
  uint64_t index0 = 0, index1 = 0;  // execution order in each recording
  bool aligned_by_sequence = false; // matched by sequence alignment, not by name
  std::vector<std::string> stack0;  // DIR0's stack frames, innermost first; filled for
                                    // records that do not pass (bwd: the forward's stack)
  std::string location;             // the user's frame in stack0 (first outside torch), or ""
  std::vector<TensorPair> tensors;
  Verdict verdict = Verdict::Pass;
  // Error this record adds over what its inputs already carry (see
  // docs/METRICS.md); origin when its inputs agree but its outputs do not.
  double input_error = 0;
  double output_error = 0;
  bool origin = false;
  // Level 2: no tensor fails, but an output differs by more than the kernel
  // floor and twice what its inputs carry: replay decides whether its kernel
  // is wrong (then it fails and is an origin). Never an origin unreplayed.
  bool screened = false;
  // Every input carrying error got it from an earlier record's output: the
  // error grew through recorded ops (a failing record that is no origin is
  // then drift, not a difference entering from outside).
  bool inherits_recorded = false;
  // A collective whose result differs while its inputs here agree: the
  // difference came from another rank (isCollectiveRecord).
  bool from_other_ranks = false;
  ReplayCheck replay;  // candidates for origin at level 2 (compare), every record (check)
  // Level-1 candidates: the environment that re-records just this region at
  // level 2 (ACC_LEVEL=2 ACC_STEPS=.. ACC_OP_RANGE=..), so replay can judge it.
  std::string rerecord;
};

// ACC_GRADS records (grad::{parameter}, op acc::grad): compared and shown,
// but never a divergence's origin or its first failing record: the ops that
// computed the gradient are.
inline bool isGradientRecord(const RecordComparison& r) { return r.op == format::kGradientOp; }

// Collectives (c10d:: ops): their results hold every rank's contribution,
// so an error they carry that their own inputs lack came from another rank
// (or from the collective's own arithmetic, which is the backend's): never
// an origin. The other rank's recording names the op that made it.
inline bool isCollectiveRecord(const RecordComparison& r) { return r.op.rfind("c10d::", 0) == 0; }

// One parameter's gradient at each optimizer step it was recorded: the
// parameter-by-step map of ACC_GRADS (analyzer/compare/gradients.h).
struct GradientCell {
  int64_t step = 0;
  double error = 0;  // the pair's carried error: rel_l2 (level 2) or the statistics' (level 1)
  double sign_agree = 1;  // NaN at level 1
  Verdict verdict = Verdict::Pass;
};
struct GradientRow {
  std::string parameter;  // its path, e.g. enc.layers.1.linear2.weight
  int64_t rank = 0;
  std::vector<GradientCell> cells;  // by step
};

struct UnmatchedRecord {
  int side = 0;  // 0: only in DIR0, 1: only in DIR1
  std::string name;
  std::string op;
  int64_t step = 0;
  int64_t rank = 0;
  uint64_t index = 0;
  uint64_t output_checksum = 0;  // RecordMeta::output_checksum
  std::string grad_fn;           // backward records: the autograd node
};

// A record that only converts a tensor's dtype (aten::to, _to_copy, a
// ToCopyBackward0 node): autocast adds them to one run where the other has
// none; the error that flows through one is its input's.
bool isDtypeCast(const UnmatchedRecord& u);

// The worst error each nn.Module's ops carry, so a user sees which block
// drifts first (records of format 5 carry their module path).
struct ModuleSummary {
  std::string module;  // "": the outermost module's own ops, or ops outside every module
  uint64_t records = 0, warn = 0, fail = 0, origins = 0;
  double worst_error = 0;    // the largest output error (rel_l2) of its records
  std::string worst_record;  // the record with it
  // Its first failing record in execution order (step, then index): "" if none.
  std::string first_failing;
  int64_t first_failing_step = 0, first_failing_rank = 0;
  uint64_t first_failing_index = 0;
};

class RecordSpill;

// One training step of one rank (analyzer/compare/steps.h).
struct StepSummary {
  int64_t step = 0, rank = 0;
  uint64_t records = 0, warn = 0, fail = 0, origins = 0;
  // The worst recordError of its forward and backward records (NaN: none compared).
  double worst_forward = std::numeric_limits<double>::quiet_NaN();
  double worst_backward = std::numeric_limits<double>::quiet_NaN();
  std::string first_failing;  // "" when none fails
  size_t first_position = 0, last_position = 0;  // its records' positions
};

struct CompareResult {
  std::string dir0, dir1;
  // The judged records in execution order (DIR0's), rank by rank: here
  // (check, tests), or spilled to disk as compare judges them (`spill`), so
  // that memory stays bounded whatever their number. Read them through
  // recordCount(), recordAt() and forEachRecord() below.
  std::vector<RecordComparison> records;
  std::shared_ptr<const RecordSpill> spill;
  std::vector<int64_t> part_ranks;  // the rank of each of the spill's parts, in order
  // With a spill: copies of the records referred to by position (origins,
  // replayed candidates, the first failing record), which replace the
  // spilled ones; and the report filter's choice of pairs (null: all).
  std::map<size_t, RecordComparison> kept;
  std::function<bool(const TensorPair&)> keeps;
  // The first kMaxUnmatched records without a partner, in rank order; the
  // others are counted by side (two unrelated runs would otherwise list
  // every record).
  static constexpr size_t kMaxUnmatched = 100000;
  std::vector<UnmatchedRecord> unmatched;
  uint64_t unmatched_not_listed[2] = {0, 0};
  std::vector<size_t> origins;            // positions of records, execution order
  size_t first_failing = SIZE_MAX;        // with a spill: the first failing record's position (summary.h)
  uint64_t origins_not_kept = 0;          // origins beyond the RankRows::kMaxKeptOrigins of a rank: in report.csv only
  uint64_t tensors_compared = 0;
  uint64_t bytes_compared = 0;            // tensor data bytes read from both sides
  uint64_t peak_held_bytes = 0;           // most record bytes held at once (--memory-mb)
  uint64_t pairs_reused = 0;              // element-wise pairs answered by an earlier pair of the same contents
  double seconds = 0;
  std::vector<std::string> problems;      // damaged input, reported and tolerated
  std::vector<std::string> notes;         // e.g. a rank only in one recording
  // What the manifests say was lost or went wrong while recording
  // (analyzer/read/recording_notes.h), "DIR/rankN: ..." per line.
  std::vector<std::string> recording_notes;
  // What the replay workers wrote on stderr (summary.json "replay_stderr").
  replay::Pool::Stderr replay_stderr;
  std::vector<std::string> filters;       // report filters in effect (--only-failed, ...);
                                          // `records` then holds the matching rows only
  uint64_t records0 = 0, records1 = 0;    // op records read in each recording
  // The runs' numeric settings (manifest "numerics"; rank 0's, or the first
  // rank pair's) and where any rank pair's differ: the first thing to check.
  nlohmann::json numerics0 = nlohmann::json::object(), numerics1 = nlohmann::json::object();
  std::vector<SettingDifference> settings_differ;
  // Per nn.Module path (analyzer/compare/modules.h), over every compared
  // record whatever the report filters; empty without module paths.
  std::vector<ModuleSummary> modules;
  // ACC_GRADS: rows in the order the parameters were first recorded.
  std::vector<GradientRow> gradients;
  // Per step and rank, in execution order (analyzer/compare/steps.h).
  std::vector<StepSummary> steps;

  const RecordComparison* firstOrigin() const;
};

// How many records; the one at a position (origins, first failing: always
// at hand); each record in order with its position (a filtered spill skips
// records without a kept pair and drops the pairs it does not keep).
size_t recordCount(const CompareResult& r);
const RecordComparison& recordAt(const CompareResult& r, size_t position);
void forEachRecord(const CompareResult& r, const std::function<void(size_t, const RecordComparison&)>& f);

}  // namespace acc::analyzer
