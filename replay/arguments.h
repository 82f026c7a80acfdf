// Rebuilds the arguments of a recorded op call from its record: tensors from
// their recorded bytes (on the CPU), every other argument from its recorded
// text, read as the op's schema types it.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/stack.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "format/record.h"

namespace acc::replay {

// Why an op cannot be replayed by nature (random numbers, a collective), or
// nullopt. `schema` may be null for ops the dispatcher does not know.
std::optional<std::string> notReplayable(const format::OpRecord& r, const c10::FunctionSchema* schema);

// A CPU tensor holding a recorded tensor's values (its bytes, contiguous).
// Throws std::runtime_error when the tensor has no data.
at::Tensor tensorFromRecord(const format::Tensor& t);

// `t` laid out with the recorded tensor's strides when they describe another
// dense layout (channels_last, a transpose): a kernel may take another path
// for it (NHWC batch norm sums in another order), and what the CPU kernel
// shows on the same inputs must be that path's. Otherwise `t` itself.
at::Tensor withRecordedLayout(const at::Tensor& t, const format::Tensor& recorded);

struct Arguments {
  torch::jit::Stack stack;
  // Floating-point tensor arguments in argument order (list items in item
  // order): the inputs autograd differentiates against in a backward replay.
  std::vector<at::Tensor> floating;
};

struct BuildOptions {
  bool promote = false;  // floating tensors become float64 (complex: complex128)
  // Floating tensors become leaves that require grad (listed in `floating`),
  // passed as clones so in-place ops can write them; except the arguments
  // named in `no_grad` (batch norm's running statistics), listed in
  // `floating` all the same so that positions stay those of the schema.
  bool grad = false;
  std::set<std::string> no_grad;
  // 10 (TF32), 7 (bfloat16), 0 (off): float32 factors of the op's products
  // are first rounded to that many mantissa bits (replay/reduced_precision.h).
  int round_mantissa = 0;
  // An op the program ran under autocast (replay/autocast_casts.h): the
  // floating inputs autocast would have cast are cast first, float32 ones
  // down to `autocast_to` or, with `autocast_up`, float16/bfloat16 ones up
  // to float32. Before promotion: the float64 replay then computes on the
  // values the kernel was given.
  std::optional<at::ScalarType> autocast_to;
  bool autocast_up = false;
};

// The arguments of forward record `r` for `schema`. Throws
// std::runtime_error naming the argument when one cannot be rebuilt.
Arguments buildArguments(const format::OpRecord& r, const c10::FunctionSchema& schema, const BuildOptions& options);

}  // namespace acc::replay
