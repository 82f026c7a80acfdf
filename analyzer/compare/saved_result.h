// A comparison kept on disk, so that the ranks of a large job can be
// compared in separate processes (compare --ranks, on as many machines as
// the cluster's scheduler gives) and joined into one verdict and one report
// (merge). compare leaves in its report directory:
//   rows/part-K.rows  the judged rows of each rank pair (record_spill.h)
//   rows/kept.rows    the rows referred to by position (origins, replayed
//                     candidates, the first failing record), replay's
//                     verdicts included
//   result.json       everything else a CompareResult holds (counts, notes,
//                     unmatched records, settings), with the rows' version
// merge reads several such directories, orders their rank pairs by rank and
// assembles them as compare assembles its own rank pairs (engine.cpp): the
// same verdict, origins and reports as one comparison of all the ranks.
#pragma once

#include <string>
#include <vector>

#include "analyzer/common/result.h"

namespace acc::analyzer {

inline constexpr const char* kSavedResultFile = "result.json";

// How the comparison was judged: the threshold flags given (flag, value)
// and --op-list, which merge's summary states as compare's did.
struct SavedJudgement {
  std::vector<std::pair<std::string, std::string>> threshold_flags;
  std::vector<std::string> op_list;
  bool operator==(const SavedJudgement& o) const {
    return threshold_flags == o.threshold_flags && op_list == o.op_list;
  }
};

// Saves `result` (which must hold a spill) into `dir`; returns why it could
// not, or "".
std::string saveResult(const CompareResult& result, const SavedJudgement& judgement, const std::string& dir);

// Joins the comparisons saved in `dirs`, and says how they were judged.
// Throws InputError (analyzer/read/recording.h) naming the directory when
// one holds no saved comparison, rows of another version, a rank another
// one holds too, or was judged otherwise than the first.
CompareResult mergeResults(const std::vector<std::string>& dirs, SavedJudgement& judgement);

}  // namespace acc::analyzer
