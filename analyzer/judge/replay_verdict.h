// What running a recorded op again says about its kernel (docs/METRICS.md,
// "Replay"): the recorded outputs are compared with the float64 replay on
// the same inputs, and the error a correct CPU kernel shows in the recorded
// dtypes (its own replay against float64) sets what is normal for this op on
// these inputs.
#pragma once

#include "analyzer/common/result.h"
#include "analyzer/judge/thresholds.h"
#include "analyzer/judge/replay_inputs.h"
#include "replay/protocol.h"

namespace acc::analyzer {

// compare: a candidate origin (`record.origin`) given both sides' replays.
// Confirmed when DIR1's kernel does not reproduce its own output within
// max(fail threshold, origin_factor x max(CPU kernel's error, DIR0's own
// replay error)); else it amplifies its inputs' error and is no origin.
// Not replayable on DIR1: the ratio rule stands.
void judgeByReplay(RecordComparison& record, const ReplayItem& item0, const replay::Outcome& out0,
                   const ReplayItem& item1, const replay::Outcome& out1, const Thresholds& thresholds);

// check: one recording's record against its own replay. Fills
// record.tensors (DIR0: the float64 replay, DIR1: the recording), verdict,
// origin (the kernel deviates) and replay.
void checkByReplay(RecordComparison& record, const ReplayItem& item, const replay::Outcome& out,
                   const Thresholds& thresholds);

}  // namespace acc::analyzer
