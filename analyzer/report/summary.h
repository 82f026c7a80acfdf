// summary.json: the machine-readable outcome of a comparison.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "analyzer/common/result.h"
#include "analyzer/judge/thresholds.h"

namespace acc::analyzer {

struct SummaryContext {
  int exit_code = 0;
  std::vector<std::string> filters;  // report filters in effect
  std::vector<std::string> op_list;  // compare's --op-list
  nlohmann::json reports = nlohmann::json::object();  // kind -> path
};

// Counts of the whole comparison.
struct CompareCounts {
  uint64_t matched = 0, unmatched0 = 0, unmatched1 = 0;
  uint64_t records_pass = 0, records_warn = 0, records_fail = 0;
  uint64_t pairs_compared = 0, pairs_not_compared = 0, pairs_pass = 0, pairs_warn = 0, pairs_fail = 0;
};
CompareCounts countResult(const CompareResult& r);

// The record a divergence is reported at: the first origin, else the first
// failing record (its error entered before any recorded op), else nullptr.
const RecordComparison* firstDivergence(const CompareResult& r);
// What "first" means across ranks: step, then DIR0's index, then rank; and
// which failing records may be the first failing one (not gradients).
bool comesFirst(const RecordComparison& a, const RecordComparison& b);
bool failsFirstCandidate(const RecordComparison& r);

// How a comparison ends (docs/METRICS.md, "Origins"): no failing record;
// no origin and the first failing record only amplifies the rounding its
// inputs carry (replay reproduced it) or inherits error that grew through
// earlier recorded ops: drift, exit 0; or a divergence: an origin, or
// failing records whose error entered from outside the recorded ops, exit 1.
enum class Ending { Match, Drift, Divergence };
Ending endingOf(const CompareResult& r);

// Unmatched records of the same rank and step that ran before `r` (at most
// `limit`, the closest last): where a difference may enter when `r` is not
// an origin.
std::vector<const UnmatchedRecord*> unmatchedBefore(const CompareResult& result, const RecordComparison& r,
                                                    size_t limit = 3);

// An unmatched record that ran before `r` and produced the contents of one
// of r's failing inputs on its side (same checksum): an op only one run has
// (an extra cast, a scaling) handed r the difference, and the drift starts
// there. `input`: which of r's tensors it fed.
struct Feeder {
  const UnmatchedRecord* record = nullptr;
  const TensorPair* input = nullptr;
};
Feeder feederOf(const CompareResult& result, const RecordComparison& r);

nlohmann::json metricsJson(const TensorPair& p);
nlohmann::json replayJson(const ReplayCheck& c);
nlohmann::json moduleSummaryJson(const ModuleSummary& m);
nlohmann::json recordSummaryJson(const RecordComparison& r, bool with_tensors);
nlohmann::json thresholdsJson(const Thresholds& t);
nlohmann::json summaryJson(const CompareResult& r, const Thresholds& t, const SummaryContext& context);

}  // namespace acc::analyzer
