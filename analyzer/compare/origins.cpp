#include "analyzer/compare/origins.h"

#include <cstdint>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_set>

namespace acc::analyzer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool hasValues(const TensorPair& p) { return p.has_stats0 && p.has_stats1; }

// Two tensors with the same contents on both sides (checksums, dtypes,
// element count) hold the same values: how uninitialized memory is followed
// from one record to the next.
using ValueKey = std::tuple<uint64_t, uint64_t, uint8_t, uint8_t, uint64_t>;

ValueKey valueKey(const TensorPair& p) {
  uint64_t n = 1;
  for (int64_t d : p.shape0) n *= static_cast<uint64_t>(d < 0 ? 0 : d);
  return {p.stats0.checksum, p.stats1.checksum, static_cast<uint8_t>(p.dtype0), static_cast<uint8_t>(p.dtype1), n};
}

void markUninitialized(TensorPair& p) {
  p.uninitialized = true;
  p.verdict = Verdict::Pass;
  p.reason = "uninitialized memory (not judged)";
  p.metrics.mismatch += std::string(p.metrics.mismatch.empty() ? "" : "; ") + "uninitialized memory";
}

// Ops returning uninitialized memory are recorded without values; memory
// that later shows up as an input differing between the runs, with the same
// dtype and shape, no recorded producer and no value yet written, is that
// memory (e.g. a parameter read by an in-place initializer, or its detach()).
// Its copies (same values on both sides) are followed through later records.
void findUninitialized(std::vector<RecordComparison>& records) {
  std::set<std::pair<uint8_t, std::vector<int64_t>>> empty_shapes;
  std::set<ValueKey> uninitialized;
  std::unordered_set<uint64_t> produced;  // DIR0 checksums of recorded outputs
  for (RecordComparison& r : records) {
    for (TensorPair& p : r.tensors) {
      if (!consumes(r, p) || !hasValues(p)) continue;
      ValueKey key = valueKey(p);
      if (uninitialized.count(key)) {
        markUninitialized(p);
      } else if (p.verdict != Verdict::Pass && p.dtype0 == p.dtype1 &&
                 empty_shapes.count({static_cast<uint8_t>(p.dtype0), p.shape0}) &&
                 !produced.count(p.stats0.checksum)) {
        markUninitialized(p);
        uninitialized.insert(key);
      }
    }
    for (TensorPair& p : r.tensors) {
      if (consumes(r, p)) continue;
      if (!hasValues(p)) {
        if (!p.metrics.compared && p.role == format::Role::Output && p.verdict == Verdict::Pass &&
            !p.has_stats0 && !p.has_stats1) {
          empty_shapes.insert({static_cast<uint8_t>(p.dtype0), p.shape0});
        }
        continue;
      }
      if (uninitialized.count(valueKey(p))) markUninitialized(p);
      produced.insert(p.stats0.checksum);
    }
  }
}

}  // namespace

bool consumes(const RecordComparison& r, const TensorPair& p) {
  return r.pass == format::Pass::Forward ? p.role == format::Role::Input : p.role == format::Role::GradIn;
}

double carriedError(const TensorPair& p) {
  if (p.uninitialized) return 0;
  const TensorMetrics& m = p.metrics;
  if (!m.compared) return p.verdict == Verdict::Fail ? kInf : 0;
  if (m.nan_mismatch || m.inf_mismatch) return kInf;
  double e = m.from_stats ? (m.checksum_equal ? 0 : m.stat_error) : m.rel_l2;
  return std::isnan(e) ? 0 : e;
}

void judgeRecords(std::vector<RecordComparison>& records, const Thresholds& thresholds) {
  findUninitialized(records);
  std::map<std::pair<int64_t, std::string>, size_t> forward;  // (step, name) -> record
  for (size_t i = 0; i < records.size(); ++i) {
    RecordComparison& r = records[i];
    r.verdict = Verdict::Pass;
    r.input_error = r.output_error = 0;
    bool output_fails = false;
    for (const TensorPair& p : r.tensors) {
      if (!p.uninitialized && p.verdict > r.verdict) r.verdict = p.verdict;
      const double e = carriedError(p);
      if (consumes(r, p)) {
        r.input_error = std::max(r.input_error, e);
      } else {
        r.output_error = std::max(r.output_error, e);
        output_fails = output_fails || p.verdict == Verdict::Fail;
      }
    }
    if (r.pass == format::Pass::Forward) {
      forward[{r.step, r.name}] = i;
    } else {
      // A backward node also reads what its forward op saved: the forward's
      // inputs and outputs. Error they carry is inherited too.
      std::string fwd = r.name;
      size_t at = fwd.rfind(".bwd");
      if (at != std::string::npos) fwd = fwd.substr(0, at) + ".fwd";
      auto it = forward.find({r.step, fwd});
      if (it != forward.end()) {
        const RecordComparison& f = records[it->second];
        r.input_error = std::max({r.input_error, f.input_error, f.output_error});
      }
    }
    r.origin = output_fails && r.output_error > thresholds.origin_factor * r.input_error;
  }
}

std::string userLocation(const std::vector<std::string>& stack) {
  auto internal = [](const std::string& f) {
    return f.find("/torch/") != std::string::npos || f.find("/lib/python3") != std::string::npos ||
           f.find("<frozen ") != std::string::npos;
  };
  for (const std::string& f : stack) {
    if (f.find(".py:") != std::string::npos && !internal(f)) return f;
  }
  return stack.empty() ? "" : stack.front();
}

}  // namespace acc::analyzer
