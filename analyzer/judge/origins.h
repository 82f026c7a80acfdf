// After the metrics: what each record's verdict is, which records hold
// uninitialized memory, and which records are origins of a divergence
// (docs/METRICS.md, "Origins").
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analyzer/common/result.h"
#include "analyzer/judge/thresholds.h"

namespace acc::analyzer {

// The error a tensor pair carries, for origin detection: rel_l2 (level 2),
// stat_error (level 1), +inf for NaN/Inf mismatches and failing shape or
// dtype mismatches, 0 for pairs not judged (uninitialized, no values).
double carriedError(const TensorPair& p);

// Views and aliases (view, reshape, t, select, expand, detach, ...): they
// compute nothing, so they are never origins (backward: the reshapes only).
bool isViewOp(const std::string& op, format::Pass pass);

// Ops whose backward masks the incoming gradient by where the forward's
// input crosses a threshold (relu, hardtanh, clamp, max pooling, ...): an
// input that differs between the runs may flip elements.
bool masksItsGradient(const std::string& op);

// A pair's carried error (rel_l2, level 1: stat_error) on the reference
// tensor's own scale, guarded only by the smallest normal number
// (thresholds.h, smallestNormal): what the kernel rules judge.
double kernelError(const TensorPair& p, const Thresholds& t);

// True for the roles a record consumes (fwd: inputs; bwd: grad_in) and
// produces (fwd: outputs; bwd: grad_out).
bool consumes(const RecordComparison& r, const TensorPair& p);

// True when a tensor the record produces fails on level-1 statistics: replay
// cannot judge it (the data were not recorded).
bool failsOnStatistics(const RecordComparison& r);

// The contents seen most recently, at most about 2 x kMax of them: a set
// that forgets its oldest half when full, so that a judge of millions of
// records holds a bounded number (a content forgotten counts as unseen:
// an error it carries then reads as entering from outside).
template <typename T>
class RecentSet {
 public:
  static constexpr size_t kMax = size_t(1) << 18;
  void insert(const T& v) {
    if (current_.size() >= kMax) {
      previous_ = std::move(current_);
      current_.clear();
    }
    current_.insert(v);
  }
  bool contains(const T& v) const { return current_.count(v) || previous_.count(v); }

 private:
  std::unordered_set<T> current_, previous_;
};

// Judges one rank's records one at a time, in execution order: marks
// uninitialized memory, sets each record's verdict, input_error,
// output_error and origin. What it remembers is bounded: the forward ops
// of the current step (for their backward records) and recent contents.
class OriginJudge {
 public:
  explicit OriginJudge(const Thresholds& thresholds) : thresholds_(thresholds) {}
  void judge(RecordComparison& r);

 private:
  struct Forward {
    std::string op;
    double input_error = 0, output_error = 0;
    double denominator_spread = 1;  // for ops dividing by an input
  };
  void findUninitialized(RecordComparison& r);
  void screen(RecordComparison& r) const;
  void sumsMayAmplify(RecordComparison& r) const;

  const Thresholds thresholds_;
  std::set<std::pair<uint8_t, std::vector<int64_t>>> empty_shapes_;
  std::set<std::tuple<uint64_t, uint64_t, uint8_t, uint8_t, uint64_t>> uninitialized_;
  RecentSet<uint64_t> produced0_;  // DIR0 checksums of recorded outputs
  // Contents (both sides' checksums, hashed) some earlier record produced:
  // error a tensor carries from there grew through recorded ops.
  RecentSet<uint64_t> produced_;
  int64_t step_ = INT64_MIN;
  std::unordered_map<std::string, Forward> forward_;  // this step's forward records by name
};

// One rank's records at once (check, tests): an OriginJudge over them.
void judgeRecords(std::vector<RecordComparison>& records, const Thresholds& thresholds);

// The frame to show as the record's location: the innermost Python frame
// outside torch and the standard library, else the innermost frame.
std::string userLocation(const std::vector<std::string>& stack);

}  // namespace acc::analyzer
