// The outcome of comparing two recordings: what `compare` computes and what
// every report (terminal, summary.json, report.csv, report.xlsx, report.html)
// presents. Metrics only: tensor data never lives here, so the result stays
// small however large the recordings are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/record.h"

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
};

struct RecordComparison {
  std::string name;          // as in DIR0 (DIR1's name when it differs: name1)
  std::string name1;
  std::string op;
  std::string grad_fn;
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
};

struct UnmatchedRecord {
  int side = 0;  // 0: only in DIR0, 1: only in DIR1
  std::string name;
  std::string op;
  int64_t step = 0;
  int64_t rank = 0;
  uint64_t index = 0;
};

struct CompareResult {
  std::string dir0, dir1;
  std::vector<RecordComparison> records;  // execution order (DIR0's)
  std::vector<UnmatchedRecord> unmatched;
  std::vector<size_t> origins;            // indices into records, execution order
  uint64_t tensors_compared = 0;
  uint64_t bytes_compared = 0;            // tensor data bytes read from both sides
  uint64_t peak_held_bytes = 0;           // most record bytes held at once (--memory-mb)
  double seconds = 0;
  std::vector<std::string> problems;      // damaged input, reported and tolerated
  std::vector<std::string> notes;         // e.g. a rank only in one recording
  std::vector<std::string> filters;       // report filters in effect (--only-failed, ...);
                                          // `records` then holds the matching rows only
  uint64_t records0 = 0, records1 = 0;    // op records read in each recording

  const RecordComparison* firstOrigin() const {
    return origins.empty() ? nullptr : &records[origins.front()];
  }
};

}  // namespace acc::analyzer
