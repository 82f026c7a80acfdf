// An op record while it is being captured: the format's record plus what its
// device tensors still owe it (statistics and data on their way to the host).
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Device.h>
#include <c10/core/Event.h>

#include <vector>

#include "format/record.h"
#include "recorder/content_store.h"

namespace acc::recorder {

// Values of one device tensor, copied into host memory behind the op's
// kernels; readable once the event that follows the copy has completed.
struct DeviceValues {
  size_t tensor = 0;  // index in tensors
  at::Tensor stats;   // host, kDeviceStatsSize float64 (level >= 1), or undefined
  at::Tensor data;    // host, the tensor's bytes in row-major order (level 2), or undefined
};

struct CapturedOp : format::OpRecord {
  std::vector<DeviceValues> device_values;
  std::vector<c10::Device> unmarked;  // devices with copies that no event follows yet
  std::vector<c10::Event> events;     // one per device and capture batch
  // Contents this record defines: referable once it is queued.
  std::vector<ContentStore::Pending> contents;

  bool inFlight() const { return !device_values.empty(); }
};

}  // namespace acc::recorder
