// Which casts autocast made for a recorded op (format v6 records say whether
// autocast was on, and with which dtype, when the op started). The record
// holds the op's inputs as the program passed them (autocast casts below the
// dispatcher's entry, where they are recorded): an fp32 weight beside a bf16
// activation. Replay casts them again, read from what the op returned
// rather than from autocast's op lists, which differ between devices and
// torch versions:
//   - its floating output is the autocast dtype: the float32 inputs were
//     cast down to it (conv, matmul, linear, ...);
//   - its floating output is float32 while an input is float16/bfloat16:
//     those were cast up (the float32 list: softmax, layer_norm, losses, ...);
//   - otherwise nothing was cast (type promotion does the rest).
#pragma once

#include <c10/core/ScalarType.h>

#include <optional>

#include "format/record.h"

namespace acc::replay {

struct AutocastCasts {
  std::optional<c10::ScalarType> to;  // nullopt: no cast
  bool up = false;                    // float16/bfloat16 inputs to float32
};

// `fwd`: the forward record (inputs, and outputs when recorded); `bwd`: its
// backward record or null (its incoming gradients have the outputs' dtypes).
AutocastCasts autocastCasts(const format::OpRecord& fwd, const format::OpRecord* bwd);

}  // namespace acc::replay
