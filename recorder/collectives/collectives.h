// Collectives (c10d:: ops: all-reduce, broadcast, all-gather, ...) as the
// dispatcher shows them: torch 2.x routes every ProcessGroup call through
// them (DDP's bucketed gradient all-reduce included); torch 1.13 only the
// calls made through c10d::ops (Python's torch.distributed, DDP's default
// all-reduce hook and broadcasts).
//
// A collective returns as soon as its backend has queued the work: its
// results are not there at the op's end. The recorder records its inputs at
// the start as for any op and its results once the work has completed (a
// callback on the work's future, which runs on the backend's thread or at
// once, with the device's streams ordered after the collective), never
// waiting for it. The results are written where no version counter sees
// them, so their storages are never deduplicated again.
#pragma once

#include <ATen/core/ivalue.h>

#include <functional>
#include <string_view>
#include <vector>

namespace acc::recorder {

inline bool isCollective(std::string_view op) { return op.substr(0, 6) == "c10d::"; }

// Collectives whose argument 0 is the buffer they fill (all-gather,
// reduce-scatter, scatter, all-to-all, gather, recv): its values at the
// start are not data.
bool fillsArgument0(std::string_view op);

// Calls `done` once the work among a collective's `outputs` has completed.
// False (and `done` not called) when there is no work or its backend gives
// no future: then the results are as good as they are now.
bool whenComplete(const std::vector<c10::IValue>& outputs, std::function<void()> done);

}  // namespace acc::recorder
