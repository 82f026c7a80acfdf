// Per-tensor statistics (format::Stats), computed where the tensor lives:
// CPU tensors by one fused pass over memory, other devices by ATen
// reductions whose few results are the only bytes copied to the host.
#pragma once

#include <ATen/ATen.h>

#include "format/record.h"

namespace acc::recorder {

format::Stats tensorStats(const at::Tensor& t);

// The two implementations, exposed so tests can check they agree.
format::Stats tensorStatsFused(const at::Tensor& cpu_tensor);
format::Stats tensorStatsAten(const at::Tensor& t);

format::Dtype dtypeOf(at::ScalarType type);

}  // namespace acc::recorder
