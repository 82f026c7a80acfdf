// Random ops as the recorder meets them: the dispatcher's op classified by
// name (format/random_ops.h) and, for ops a later torch adds, by its
// nondeterministic_seeded tag (recorder/random/random_tape.h).
#pragma once

#include <ATen/record_function.h>

#include "format/random_ops.h"

namespace acc::recorder {

using format::RandomKind;
using format::drawnOutput;
using format::drawsMask;

// Classifies the op `fn` calls, cached per op on each thread.
RandomKind randomKind(const at::RecordFunction& fn);

// An Opaque op whose arguments say it draws nothing this call (dropout_p
// 0, training false): fused attention without dropout, rrelu in eval.
bool drawsNothing(const at::RecordFunction& fn);

}  // namespace acc::recorder
