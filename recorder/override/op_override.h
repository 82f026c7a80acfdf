// ACC_OVERRIDE: the ops named there are computed again in float64 on the
// CPU, on the op's own inputs, and the result is written into the op's
// outputs in their own dtype and device. It answers the user's question
// once compare has named an op: if this op were right, would the loss
// follow the reference? It changes numbers on purpose, only when asked.
//
// How: the op runs as the program ran it (its autograd node, its saved
// tensors, its device kernel all as usual); at its start the inputs are
// copied to the CPU in float64 (before an in-place op overwrites them), at
// its end the op is called again on those copies and each tensor output is
// overwritten through an alias with a version counter of its own (as
// ACC_RANDOM's replay does), so autograd sees no in-place write. Forward
// ops (aten::gelu) and the backward ops autograd calls (aten::gelu_backward)
// are handled alike. Only the outermost overridden op of a call is
// computed: an op nested inside it is overwritten by it anyway.
//
// The float64 call runs with acc's callbacks off and below autocast and
// Python's dispatch modes and subclasses, so that neither a program's
// autocast nor a TorchDispatchMode changes the reference it computes. An op
// that draws random numbers is refused (its draws would differ); calls on
// tensors without memory of their own (torch.compile's tracing, Python
// subclasses) are left alone, and compiled code, whose ops the dispatcher
// never sees one by one, is said once.
// Reading a device's inputs waits for the device: an overridden op costs a
// synchronisation per call.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "env/config.h"

namespace acc::recorder {

class OpOverride {
 public:
  // One overridden call between its start and its end.
  // It marks the thread as inside an overridden op while it lives.
  struct Call {
    Call();
    ~Call();
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;
    size_t entry = 0;                     // which of the configured ops
    c10::optional<c10::OperatorHandle> op;  // the op itself, found at its start
    std::vector<c10::IValue> inputs;      // float64 CPU copies
  };

  explicit OpOverride(std::vector<env::OverrideOp> ops);

  // The op starting now, when it is overridden at `step` (and is not
  // nested inside another overridden op): its inputs, copied. Never throws.
  std::unique_ptr<Call> start(const at::RecordFunction& fn, int64_t step);
  // Computes the call and overwrites the op's outputs. Never throws.
  void finish(const at::RecordFunction& fn, Call& call);

  // torch.compile'd code runs (a compiled region's scope, or a compiled
  // graph's CompiledFunction call: one region may show both): its ops are
  // not dispatched one by one, so none is overridden there. Said once,
  // counted.
  void noteCompiled();

  // "aten::gelu, aten::gelu_backward@2-4": for the start line.
  std::string describe() const;
  // At exit: calls per op, failures.
  std::string summary() const;
  nlohmann::json toJson() const;  // the manifest's "override"

 private:
  struct Entry {
    env::OverrideOp op;
    std::atomic<uint64_t> calls{0};
    std::atomic<bool> refused{false};  // draws random numbers: left as it is
  };
  const Entry* match(const at::RecordFunction& fn, int64_t step, size_t& index);
  void fail(const std::string& op, const std::string& why);

  std::vector<std::unique_ptr<Entry>> entries_;
  std::atomic<uint64_t> errors_{0};
  std::atomic<uint64_t> compiled_{0};  // compiled code entered
  // Calls on tensors without memory (torch.compile tracing, subclasses):
  // left alone.
  std::atomic<uint64_t> unreal_{0};
  mutable std::mutex notes_mutex_;
  std::vector<std::string> notes_;  // the first failures, one line each
};

}  // namespace acc::recorder
