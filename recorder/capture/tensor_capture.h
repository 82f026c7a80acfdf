// Turns the IValues of an op (arguments, results, gradients) into format
// records: tensors with metadata, statistics (level >= 1) and data (level 2),
// and scalar arguments as text.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <c10/util/FunctionRef.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "format/record.h"
#include "recorder/capture/capture_guard.h"
#include "recorder/observe/captured_op.h"
#include "recorder/observe/op_writes.h"

namespace acc::recorder {

// How to capture the tensors of one op's arguments or results.
struct Capture {
  int level = 0;
  // Both callables are references, not owners (the caller's locals outlive
  // its Capture): a std::function was built and destroyed twice per op.
  c10::function_ref<void(c10::Device)> devices;  // told every tensor's device
  // True for a tensor holding uninitialized memory: metadata only, flagged.
  c10::function_ref<bool(const at::Tensor&)> uninitialized;
  ContentStore* contents = nullptr;  // null: every tensor captured whole
  StatsBatch* batch = nullptr;  // device statistics in batches; null: each tensor's alone
  // Outputs of an op that fills them with one value (zero_, ones_like):
  // their statistics are known without reading them (a device's without a
  // kernel, a CPU tensor's without a pass).
  std::optional<double> constant;
  TensorHold* hold = nullptr;  // ACC_WATCH: each tensor captured is held here too
  // Inputs, level 2: the arguments the op writes. Their values at the start
  // are kept so that the outputs on the same tensors are recorded as deltas
  // (CapturedOp::delta_bases). Null: none kept.
  const OpWrites* writes = nullptr;
  // Held from the first tensor whose capture calls ops to the end of the batch.
  mutable LazyCaptureGuard guard;
};

// Appends the tensors of `value` to `record` (scalars as text for inputs).
// CPU tensors get their values now; device tensors queue them
// (device_capture.h), and the caller ends the batch with markCopies().
void captureValue(const c10::IValue& value, format::Role role, uint32_t position, const Capture& capture,
                  CapturedOp& record);

// Ops whose outputs hold whatever memory they got: their contents are not
// results, so only their metadata is recorded.
bool outputsUninitialized(std::string_view op);  // called at the end of every top-level op

// Metadata of any tensor; statistics and data too for a CPU tensor.
format::Tensor captureTensor(const at::Tensor& t, format::Role role, uint32_t position,
                             uint32_t item, int level);
// Appends `t` to `r` at level 2, as the tensor `like` (its role, position
// and item): a device tensor's statistics are taken alone, now (one op's
// find, the watch's or ACC_REFERENCE's), its bytes copied behind its
// kernels; the caller ends the batch with markCopies().
format::Tensor& captureWhole(const at::Tensor& t, const format::Tensor& like, CapturedOp& r);
// The same into `out`, an empty tensor (record_pool::appendTensor's).
void captureTensorInto(format::Tensor& out, const at::Tensor& t, format::Role role, uint32_t position,
                       uint32_t item, int level);

// The version of t's autograd version counter; kNoVersion for tensors
// without one (inference tensors, tensors inside a kernel).
constexpr uint32_t kNoVersion = UINT32_MAX;
uint32_t versionOf(const at::Tensor& t);

// Whether acc can read the values of `t`: strided, a known element type, not
// quantized, and with memory of its own (not meta, fake or a wrapper).
bool readable(const at::Tensor& t);
// A device's name as records spell it ("cpu", "cuda:0").
std::string deviceName(c10::Device d);

}  // namespace acc::recorder
