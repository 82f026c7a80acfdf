// The few torch API differences between the versions acc builds against
// (1.13 from Debian, 2.x wheels), each behind one named function.
#pragma once

#include <ATen/Version.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/function.h>

#include <cstdint>
#include <string>

namespace acc::recorder::compat {

// The running torch's version, read from the library (not from headers), so
// a core loaded into a different torch can tell.
inline std::string runningTorchVersion() {
  const std::string config = at::show_config();
  const std::string key = "TORCH_VERSION=";
  size_t pos = config.find(key);
  if (pos == std::string::npos) return "unknown";
  pos += key.size();
  return config.substr(pos, config.find_first_of(", \n", pos) - pos);
}

// Thread id that autograd nodes remember as their forward thread.
inline uint64_t currentThreadId() { return at::RecordFunction::currentThreadId(); }

// Next autograd sequence number on this thread; nodes created by an op take
// the numbers between its start and end.
inline uint64_t peekSequenceNr() { return at::sequence_number::peek(); }

using PostHook = torch::autograd::FunctionPostHook;
using VariableList = torch::autograd::variable_list;

}  // namespace acc::recorder::compat
