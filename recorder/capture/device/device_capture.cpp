#include "recorder/capture/device/device_capture.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>

#include "recorder/capture/device/fused_stats.h"
#include "recorder/write/record_pool.h"
#include "recorder/capture/cpu/tensor_stats.h"

namespace acc::recorder {
namespace {

// Whether this device type's runtime gives pinned host memory (CUDA does;
// a PrivateUse1 backend only if it registers a host allocator, which torch
// 1.13 cannot). Asked once per device type.
bool pinnedFor(c10::DeviceType type) {
  constexpr int kTypes = static_cast<int>(c10::DeviceType::COMPILE_TIME_MAX_DEVICE_TYPES);
  static std::atomic<int8_t> known[kTypes] = {};  // 0 unknown, 1 yes, -1 no
  const int i = static_cast<int>(type);
  if (i < 0 || i >= kTypes) return false;
  if (const int8_t k = known[i].load(std::memory_order_relaxed)) return k > 0;
  bool ok = false;
  try {
    ok = at::empty({1}, at::TensorOptions().dtype(at::kByte).pinned_memory(true)).is_pinned();
  } catch (...) {
    ok = false;  // this device's runtime has no pinned host allocator
  }
  known[i].store(ok ? 1 : -1, std::memory_order_relaxed);
  return ok;
}


class InFlightOp final : public InFlightRecord {
 public:
  explicit InFlightOp(std::unique_ptr<CapturedOp> op) : op_(std::move(op)) {
    for (const DeviceValues& v : op_->device_values) {
      if (v.stats.defined()) held_ += v.stats.nbytes();
      if (v.data.defined()) held_ += v.data.nbytes();
    }
  }

  bool arrived() override { return valuesArrived(*op_); }

  void nudge() override {
    for (const DeviceValues& v : op_->device_values) {
      if (v.batched.flight && !v.batched.flight->launched()) v.batched.owner->flushIfOpen(v.batched.flight.get());
    }
  }

  // Its record goes back to the op threads' pools (record_pool.h), buffers
  // and all: device records end on the writer thread.
  ~InFlightOp() override { record_pool::recycle(std::move(op_)); }

  void encodeInto(std::string& out) override {
    takeArrivedValues(*op_);
    size_t size = 0;
    forEachData(*op_, [&](format::Tensor& t, DataBuffer* apart) { size += apart ? apart->size() : t.data.size(); });
    format::encode(*op_, out);
    out.reserve(out.size() + size);
    forEachData(*op_, [&](format::Tensor& t, DataBuffer* apart) {
      out.append(apart != nullptr ? apart->view() : std::string_view(t.data));
    });
  }

  uint64_t heldBytes() const override { return held_; }

 private:
  std::unique_ptr<CapturedOp> op_;
  uint64_t held_ = 0;
};

}  // namespace

bool valuesArrived(const CapturedOp& op) {
  for (const c10::Event& e : op.events) {
    if (!e.query()) return false;
  }
  for (const DeviceValues& v : op.device_values) {
    if (v.batched.flight && !v.batched.flight->arrived()) return false;
  }
  return true;
}

void takeArrivedValues(CapturedOp& op) {
  for (DeviceValues& v : op.device_values) {
    format::Tensor& t = op.tensors[v.tensor];
    if (v.stats.defined()) {
      t.stats = statsFromBuffer(v.stats, statsElements(t));
      t.has_stats = true;
    }
    if (v.batched.flight) {
      // Without statistics (counted by the batch) when they could not be
      // taken: never wrong ones.
      if (std::optional<format::Stats> s = v.batched.flight->stats(v.batched.slot)) {
        t.stats = *s;
        t.has_stats = true;
      }
    }
    if (v.data.defined()) {
      t.data.assign(static_cast<const char*>(v.data.data_ptr()), v.data.nbytes());
      t.has_data = true;
    }
  }
  op.device_values.clear();
}

at::Tensor hostBuffer(at::IntArrayRef sizes, at::ScalarType dtype, c10::DeviceType from) {
  return at::empty(sizes, at::TensorOptions().dtype(dtype).pinned_memory(pinnedFor(from)));
}

c10::Event recordEvent(const c10::Device& device) {
  const c10::impl::DeviceGuardImplInterface* impl = c10::impl::getDeviceGuardImpl(device.type());
  c10::Event event(device.type());
  event.record(impl->getStream(device));
  return event;
}

void captureOnDevice(const at::Tensor& t, int level, size_t index, CapturedOp& op, StatsBatch* batch,
                     bool with_stats) {
  const c10::DeviceType type = t.device().type();
  DeviceValues values;
  values.tensor = index;
  if (level >= 2) {
    // Before the batch may run (add() below), so the data is taken first.
    values.data = hostBuffer(t.sizes(), t.scalar_type(), type);
    values.data.copy_(t, /*non_blocking=*/true);
  }
  if (level >= 1 && with_stats) {
    if (batch != nullptr) {
      values.batched = batch->add(t);
    } else {
      values.stats = hostBuffer({kDeviceStatsSize}, at::kDouble, type);
      // The device's own kernel (one launch) where it has one.
      values.stats.copy_(hasFusedStats(t.device()) ? fusedStats({t}).view({-1}) : deviceStats(t),
                         /*non_blocking=*/true);
    }
  }
  if (!values.stats.defined() && !values.data.defined() && !values.batched.flight) return;
  // Copies issued now need an event behind them; a batch ticket has its
  // batch's (one per batch, not per op: recording an event costs a device's
  // host microseconds, as a launch does).
  const bool copied = values.stats.defined() || values.data.defined();
  op.device_values.push_back(std::move(values));
  if (copied && std::find(op.unmarked.begin(), op.unmarked.end(), t.device()) == op.unmarked.end()) {
    op.unmarked.push_back(t.device());
  }
}

void markCopies(CapturedOp& op) {
  for (const c10::Device& device : op.unmarked) op.events.push_back(recordEvent(device));
  op.unmarked.clear();
}

std::unique_ptr<InFlightRecord> inFlight(std::unique_ptr<CapturedOp> op) {
  return std::make_unique<InFlightOp>(std::move(op));
}

}  // namespace acc::recorder
