// What the replay stage needs of a recording: each chosen op record split
// into the request (its inputs; for a backward record, first the forward
// record holding what autograd saved) and what it recorded as its result.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "analyzer/read/numeric_settings.h"
#include "analyzer/judge/sum_replay.h"
#include "analyzer/read/recording.h"
#include "format/record.h"
#include "replay/protocol.h"

namespace acc::analyzer {

struct ReplayItem {
  uint64_t index = 0;           // the record's index in its rank
  format::OpRecord recorded;    // the record with its produced tensors only (outputs, grad_out), data loaded
  replay::Request request;      // inputs only, data loaded
  std::string not_replayable;   // set when no request can be made: why
  AllowedPrecision precision;   // the reduced precision the run's settings allowed the op
  SumReplay sums;               // a composite op's node: what the analyzer replays itself (sum_replay.h)
};

// True for the roles an op produces: outputs (forward), grad_out (backward).
bool produces(const format::OpRecord& r, const format::Tensor& t);

// Walks `rank`'s records in file order; for each op record that `want`
// selects (it sees the metadata, without data) hands `take` its item.
// Stack records go to `stacks` when given; a backward item's recorded
// stack_id is its forward op's (where the user called the op).
ReadDamage forEachReplayItem(const RankRecording& rank, const std::function<bool(const format::OpRecord&)>& want,
                             const std::function<void(ReplayItem&&)>& take,
                             std::map<uint64_t, format::StackRecord>* stacks = nullptr);

}  // namespace acc::analyzer
