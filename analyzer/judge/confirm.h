// Replay confirms or refutes compare's candidate origins: each candidate of
// a level-2 comparison is run again on both sides' recorded inputs
// (replay/), and only one whose kernel under test does not reproduce its
// own output stays an origin (analyzer/judge/replay_verdict.h).
#pragma once

#include <string>
#include <vector>

#include "analyzer/common/result.h"
#include "analyzer/judge/thresholds.h"
#include "analyzer/read/recording.h"
#include "replay/pool.h"

namespace acc::analyzer {

// `records`: one rank pair's judged records. Candidates compared on
// statistics (level 1) are left as they are. At most `limit` candidates are
// replayed (the first ones); a note says when more were left to the ratio
// rule.
void confirmByReplay(std::vector<RecordComparison>& records, const RankRecording& rank0, const RankRecording& rank1,
                     const Thresholds& thresholds, replay::Pool& pool, size_t limit, std::vector<std::string>& notes);

}  // namespace acc::analyzer
