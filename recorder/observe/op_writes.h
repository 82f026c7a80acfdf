// Which arguments an op writes, from its schema: alias annotations (in-place
// ops, out=) and the running statistics a nested native_batch_norm updates
// without announcing it. Found once per operator overload and kept: a
// schema copy (RecordFunction::operator_schema()) costs microseconds, and on
// a device every op whose inputs wait in a statistics batch asks.
#pragma once

#include <ATen/record_function.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "recorder/ivalue_tensors.h"

namespace acc::format {
struct OpRecord;
}

namespace acc::recorder {

struct OpWrites {
  bool known = false;             // the scope is an op with a schema
  std::vector<uint16_t> written;  // indexes of the arguments it writes
  // Some of them its schema does not mark (a batch norm's running
  // statistics): their version counters do not move either.
  bool unannounced = false;

  bool writes(size_t argument) const {
    for (uint16_t w : written) {
      if (w == argument) return true;
    }
    return false;
  }
};

// The scope's writes; `known` false for scopes without a schema (torch's
// named scopes, autograd nodes), which are not cached. Thread-safe; the
// reference stays valid for the process's life.
const OpWrites& opWrites(const at::RecordFunction& fn);

// Calls f(tensor) for each tensor of the arguments `writes` names among an
// op's `inputs` (its boxed arguments, in the schema's order).
template <typename F>
void forEachWrittenTensor(const OpWrites& writes, c10::ArrayRef<const c10::IValue> inputs, F&& f) {
  for (uint16_t i : writes.written) {
    if (i < inputs.size()) forEachTensor(inputs[i], f);
  }
}

// By name, where a record is all there is: in-place ops write argument 0
// (add_, relu_, _foreach_mul_, ...).
bool writesInPlace(std::string_view op);
// In-place ops that replace all of argument 0 whatever it held (copy_,
// fill_, zero_, the random fills, set_, resize_): its old values are not an
// input of theirs.
bool replacesArgument0(std::string_view op);
// The one value an op fills its output with (zero_, zeros, ones_like,
// fill_ with a number), from its name and recorded arguments: what the
// output holds is then known without reading it. nullopt for other ops.
std::optional<double> filledWith(const format::OpRecord& r);

}  // namespace acc::recorder
