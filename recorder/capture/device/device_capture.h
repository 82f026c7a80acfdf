// Capture of tensors that live on a device other than the CPU (CUDA, or any
// PrivateUse1 accelerator), the counterpart of the host capture in
// tensor_capture.cpp. Statistics are computed by the device's own kernels on
// the op's current stream (recorder::deviceStats), level-2 bytes are staged,
// and both travel to host memory (pinned where the device offers it) by
// non-blocking copies; an event recorded after them tells the writer thread
// when the record can be completed. Nothing here waits for the device, and
// everything goes through c10's device-generic interfaces.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Event.h>

#include <memory>

#include "recorder/observe/captured_op.h"
#include "recorder/capture/device/in_flight.h"

namespace acc::recorder {

// Queues the statistics (level >= 1) and data (level 2) of device tensor
// `t`, which is op.tensors[index]; `with_stats` false: the data alone.
// Statistics join `batch` (stats_batch.h); null: summarised alone now by
// recorder::deviceStats (about 15 launches: one op's find).
void captureOnDevice(const at::Tensor& t, int level, size_t index, CapturedOp& op, StatsBatch* batch,
                     bool with_stats = true);

// Records an event on the current stream of each device that has copies
// queued since the last call: called at the end of each capture batch.
void markCopies(CapturedOp& op);

// Host memory for values copied from a device of type `from`: pinned where
// that device's runtime offers it, so the copy does not wait.
at::Tensor hostBuffer(at::IntArrayRef sizes, at::ScalarType dtype, c10::DeviceType from);

// An event recorded now on `device`'s current stream.
c10::Event recordEvent(const c10::Device& device);

// Whether every device value of `op` has reached the host; never blocks.
// May throw (a device error).
bool valuesArrived(const CapturedOp& op);
// After valuesArrived(): moves the values into op's tensors (statistics,
// level-2 bytes); op is then a host record.
void takeArrivedValues(CapturedOp& op);

// The writer's view of an op with device values: arrived when its events
// have completed; encoding fills the values into the record.
std::unique_ptr<InFlightRecord> inFlight(std::unique_ptr<CapturedOp> op);

}  // namespace acc::recorder
