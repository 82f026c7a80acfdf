// What a rank's manifest says went wrong while it was recorded, in words:
// records the recorder dropped or could not write (and why), a run that a
// signal ended, a process that never wrote its final manifest. list prints
// them under the rank's line; compare and check on stderr and in
// summary.json, so that nothing lost goes unsaid.
#pragma once

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

#include "analyzer/read/recording.h"

namespace acc::analyzer {

// One line per finding, without the rank; empty for a clean recording.
std::vector<std::string> recordingNotes(const nlohmann::json& manifest);

// "DIR/rank0: " before each of the ranks' notes.
std::vector<std::string> recordingNotes(const std::vector<RankRecording>& ranks);

// The records ACC_REFERENCE wrote at level 2 as its finds in an otherwise
// level-1 recording (manifest "reference"): compare replays them as it
// replays level-2 candidates.
std::set<std::string> referenceFinds(const nlohmann::json& manifest);

}  // namespace acc::analyzer
