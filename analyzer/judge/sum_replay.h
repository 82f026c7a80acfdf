// The part of a composite op's autograd node that the analyzer can replay
// itself: a produced tensor that sums a consumed one over its leading
// dimensions, as a bias gradient sums the output gradient over the batch
// (linear's AddmmBackward0, an AddBackward0 that broadcast). acc-replay runs
// whole ops, and such a node is one of several behind one recorded op.
#pragma once

#include "format/record.h"
#include "replay/protocol.h"

namespace acc::analyzer {

struct SumReplay {
  format::OpRecord recorded;  // the produced tensors that sum a consumed one, as recorded
  replay::Outcome outcome;    // their float64 sums (float64), and float32 sums rounded to their dtype (same_dtype)
  bool empty() const { return recorded.tensors.empty(); }
};

// From a backward record's consumed tensors (`consumed`, values loaded) and
// its produced ones (`produced`, values loaded): each produced floating
// tensor of n elements whose shape ends a consumed tensor's shape of more
// elements, summed over the rest in float64. Whether it is that sum at all
// is for the judge to see (DIR0's own error against it).
SumReplay replaySums(const format::OpRecord& consumed, const format::OpRecord& produced);

}  // namespace acc::analyzer
