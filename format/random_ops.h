// Which ops draw random numbers, by name: what ACC_RANDOM saves and replays
// (recorder/random/random_tape.h) and what compare tells apart when a draw is
// where two runs part (each device's generator draws other numbers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace acc::format {

enum class RandomKind : uint8_t {
  None,
  // Output 0 is the draw: rand*, randn*, randint*, randperm, bernoulli*,
  // normal*, uniform*, exponential_, multinomial, ...
  Draw,
  // native_dropout: output 1 is the keep mask; output 0 is input * mask /
  // (1 - p), recomputed when the mask is replayed.
  DropoutMask,
  // Composites whose draws are made by the ops they call (dropout, lstm):
  // nothing of their own to save.
  Composite,
  // Kernels that draw inside (fused attention with dropout, cuDNN RNNs,
  // rrelu): their draws cannot be replaced from outside.
  Opaque,
};

// `op` as the dispatcher names it ("aten::dropout"); None for names not
// listed (the recorder also asks the dispatcher's nondeterministic_seeded tag).
RandomKind randomKindOf(std::string_view op);

// Ops whose draw is a 0/1 mask (bernoulli, native_dropout's mask): their
// values convert exactly between element types, so a CPU's float mask
// replays into a device's bool one and back.
bool drawsMask(std::string_view op);

// Index of the output holding the draw (Draw, DropoutMask).
inline size_t drawnOutput(RandomKind kind) { return kind == RandomKind::DropoutMask ? 1 : 0; }

}  // namespace acc::format
