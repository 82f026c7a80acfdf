// testdev: a test-only accelerator on PyTorch's PrivateUse1 key, in the
// pattern of PyTorch's open-registration example and OpenReg backend. Its
// memory is host memory and its kernels are ATen's CPU kernels reached
// through the CPU fallback, but to everything above the dispatcher it is a
// device: tensors report it, copies to and from it go through _copy_from,
// streams and events go through its DeviceGuardImpl.
//
// What it adds for acc's tests:
//  - counters (C functions, read with ctypes) of what costs a real device a
//    host synchronisation: blocking copies between host and device
//    requested from outside a kernel (either way: CUDA's copy_ waits for
//    its stream unless non_blocking), .item() (_local_scalar_dense), and event, stream and
//    device synchronisations; and of kernels: ops the device runs when
//    called from outside another of its kernels, copies included, each of
//    which costs a real device a launch;
//  - events that complete TESTDEV_EVENT_DELAY_US microseconds (default
//    2000) after they are recorded, as a device running behind the host
//    would, so a caller that does not wait for them sees them incomplete;
//  - what launches cost on real hardware, both optional (default 0):
//    TESTDEV_LAUNCH_US, microseconds of host time each kernel launch spends
//    on the calling thread, as a driver does; TESTDEV_KERNEL_US, device
//    time each kernel takes on a timeline of its own, which events and the
//    host's waits (.item(), blocking copies, synchronisations) wait for;
//  - the time its kernels ran on the calling thread after their launch cost
//    (testdev_kernel_ns: ATen's CPU kernels and this file's wrapping, work
//    a real device does while its host goes on);
//  - its allocator's bytes in use and their peak (testdev_memory_*), the
//    device's own memory, apart from the host's; TESTDEV_TRACE=1 prints
//    each kernel's op to stderr;
//  - TESTDEV_WRONG_OP=name (e.g. gelu): that op's first output is scaled by
//    (1 + TESTDEV_WRONG_SCALE, default 1e-3), a slightly wrong kernel; with
//    TESTDEV_NAN_CALL=N instead, the op's calls are right but the Nth
//    (from 0) writes a NaN into its first output's first element;
//  - a kernel of its own for acc's statistics op, acc::tensor_stats (the
//    CPU's, one launch per batch), as a vendor's plugin can give it;
//    TESTDEV_STATS_KERNEL=0 leaves it out (acc then takes ATen's kernels);
//  - TESTDEV_SUM_ORDER=reverse: sum() adds in reverse order, a right kernel
//    that rounds differently;
//  - TESTDEV_MATMUL=tf32: mm, addmm and bmm round their float32 factors to
//    TF32 (10 mantissa bits) first, as a GPU's tensor cores do where
//    torch's settings allow TF32;
//  - a random generator of its own (seeded by TESTDEV_SEED, default 1)
//    for bernoulli_ and a fused native_dropout kernel (it draws inside, as
//    CUDA's does): dropout here draws other masks than the CPU's from the
//    same seed, as every real device does.
//
// Python: torch.ops.load_library(path); on torch 2.x tests/accelerator/
// testdev.py also renames the backend to "testdev" (torch 1.13 has the key
// but not the renaming API: there the device is "privateuseone").
#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/NativeFunctions.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <cstdint>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "replay/reduced_precision.h"
#include "testdev_compat.h"

#if TESTDEV_HAS_HOOKS
#include <ATen/detail/PrivateUse1HooksInterface.h>
#endif

namespace testdev {
namespace {

using compat::Optional;
constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;

std::atomic<uint64_t> g_blocking_copies{0}, g_scalar_reads{0}, g_synchronizations{0}, g_kernels{0};
std::atomic<uint64_t> g_events_recorded{0}, g_event_queries{0};
std::atomic<uint64_t> g_kernel_ns{0};  // KernelScope's
// Set while a kernel runs: its copies are the device's own work.
thread_local int t_in_kernel = 0;
// This thread's time spent waiting for the device's timeline (waitForDevice).
thread_local int64_t t_waited_ns = 0;

int64_t envInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The device's timeline: when the kernels launched so far will have run.
std::atomic<int64_t> g_device_free_ns{0};

// Called for each launch: the host pays TESTDEV_LAUNCH_US (spinning, as a
// driver's submission does), the device TESTDEV_KERNEL_US after its
// earlier work.
void launch() {
  static const int64_t launch_ns = envInt("TESTDEV_LAUNCH_US", 0) * 1000;
  static const int64_t kernel_ns = envInt("TESTDEV_KERNEL_US", 0) * 1000;
  if (launch_ns > 0) {
    const int64_t until = nowNs() + launch_ns;
    while (nowNs() < until) {
    }
  }
  if (kernel_ns > 0) {
    const int64_t now = nowNs();
    int64_t free = g_device_free_ns.load(std::memory_order_relaxed);
    while (!g_device_free_ns.compare_exchange_weak(free, std::max(free, now) + kernel_ns, std::memory_order_relaxed)) {
    }
  }
}

// The host waits for the device's timeline to catch up.
void waitForDevice() {
  const int64_t free = g_device_free_ns.load(std::memory_order_relaxed);
  const int64_t now = nowNs();
  if (free > now) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(free - now));
    t_waited_ns += nowNs() - now;
  }
}

struct KernelScope {
  // Counts a kernel launch unless another kernel runs it, and the time the
  // kernel then runs on the calling thread (after its launch cost): work a
  // real device does while the host goes on (testdev_kernel_ns).
  KernelScope() {
    if (t_in_kernel++ == 0) {
      g_kernels.fetch_add(1, std::memory_order_relaxed);
      launch();
      start_ns_ = nowNs();
      waited_ns_ = t_waited_ns;
    }
  }
  ~KernelScope() {
    if (--t_in_kernel != 0) return;
    // Less a blocking copy's wait for the device: the host's, as on a real one.
    const int64_t ran = nowNs() - start_ns_ - (t_waited_ns - waited_ns_);
    g_kernel_ns.fetch_add(static_cast<uint64_t>(std::max<int64_t>(ran, 0)), std::memory_order_relaxed);
  }
  KernelScope(const KernelScope&) = delete;
  KernelScope& operator=(const KernelScope&) = delete;

 private:
  int64_t start_ns_ = 0, waited_ns_ = 0;
};

// ---- memory ---------------------------------------------------------------

// Bytes in use and their peak, by allocation.
std::mutex g_memory_mutex;
std::unordered_map<void*, size_t>* g_sizes = new std::unordered_map<void*, size_t>();  // never freed: used until exit
uint64_t g_memory_now = 0, g_memory_peak = 0;

void freeMemory(void* p) {
  if (p == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(g_memory_mutex);
    auto it = g_sizes->find(p);
    if (it != g_sizes->end()) {
      g_memory_now -= it->second;
      g_sizes->erase(it);
    }
  }
  std::free(p);
}

struct Allocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) const { return make(n); }
  c10::DataPtr allocate(size_t n) { return make(n); }  // torch >= 2.3: non-const
  c10::DeleterFnPtr raw_deleter() const override { return &freeMemory; }
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }

  static c10::DataPtr make(size_t n) {
    void* p = std::malloc(n == 0 ? 1 : n);
    {
      std::lock_guard<std::mutex> lock(g_memory_mutex);
      (*g_sizes)[p] = n;
      g_memory_now += n;
      g_memory_peak = std::max(g_memory_peak, g_memory_now);
    }
    return {p, p, &freeMemory, c10::Device(kType, 0)};
  }
};
Allocator g_allocator;
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator);

// ---- streams and events ---------------------------------------------------

struct Event {
  std::chrono::steady_clock::time_point ready;
};

struct GuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device) const override { return c10::Device(kType, 0); }
  c10::Device getDevice() const override { return c10::Device(kType, 0); }
  void setDevice(c10::Device) const override {}
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device d) const noexcept override { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream getDefaultStream(c10::Device d) const { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool) const { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream getNewStream(c10::Device d, int) const { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, s.device());
  }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }

  void record(void** event, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag) const override {
    if (*event == nullptr) *event = new Event();
    static const int64_t delay_us = envInt("TESTDEV_EVENT_DELAY_US", 2000);
    // After the work queued before it, then the delay.
    const int64_t ready = std::max(nowNs(), g_device_free_ns.load(std::memory_order_relaxed)) + delay_us * 1000;
    static_cast<Event*>(*event)->ready = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ready));
    g_events_recorded.fetch_add(1);
  }
  void block(void*, const c10::Stream&) const override {}  // a device-side wait: no host sync
  bool queryEvent(void* event) const override {
    g_event_queries.fetch_add(1);
    return event == nullptr || std::chrono::steady_clock::now() >= static_cast<Event*>(event)->ready;
  }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    delete static_cast<Event*>(event);
  }
  // The host waits for the device: counted.
  void synchronizeEvent(void*) const {
    g_synchronizations.fetch_add(1);
    waitForDevice();
  }
  void synchronizeStream(const c10::Stream&) const {
    g_synchronizations.fetch_add(1);
    waitForDevice();
  }
  void synchronizeDevice(const c10::DeviceIndex) const {
    g_synchronizations.fetch_add(1);
    waitForDevice();
  }
  bool queryStream(const c10::Stream&) const { return true; }
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const {}
};
C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

#if TESTDEV_HAS_HOOKS
// One device, always there; no pinned memory and no generator of its own
// (torch then falls back to pageable copies, and the tests draw random
// numbers on the CPU).
struct Hooks final : at::PrivateUse1HooksInterface {
#if TESTDEV_HOOKS_PRIMARY_CONTEXT
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
#endif
  bool isBuilt() const { return true; }
  bool isAvailable() const { return true; }
  c10::DeviceIndex deviceCount() const { return 1; }
  c10::DeviceIndex getCurrentDevice() const { return 0; }
  at::Device getDeviceFromPtr(void*) const override { return c10::Device(kType, 0); }
};
const bool g_hooks_registered = [] {
  at::RegisterPrivateUse1HooksInterface(new Hooks());
  return true;
}();
#endif

// ---- kernels --------------------------------------------------------------

bool onDevice(const at::Tensor& t) { return t.device().type() == kType; }

// A CPU tensor over the same memory (the device's memory is host memory).
at::Tensor hostAlias(const at::Tensor& t) {
  if (!onDevice(t)) return t;
  auto* base = static_cast<char*>(t.storage().unsafeGetStorageImpl()->data_ptr().get());
  return at::from_blob(base + t.storage_offset() * static_cast<int64_t>(t.element_size()), t.sizes(),
                       t.strides(), t.options().device(at::kCPU));
}

at::Tensor emptyMemoryFormat(at::IntArrayRef size, Optional<at::ScalarType> dtype, Optional<at::Layout>,
                             Optional<at::Device>, Optional<bool>, Optional<at::MemoryFormat> memory_format) {
  constexpr c10::DispatchKeySet keys(c10::DispatchKey::PrivateUse1);
  return at::detail::empty_generic(size, &g_allocator, keys, c10::dtype_or_default(dtype), memory_format);
}

at::Tensor emptyStrided(at::IntArrayRef size, at::IntArrayRef stride, Optional<at::ScalarType> dtype,
                        Optional<at::Layout>, Optional<at::Device>, Optional<bool>) {
  constexpr c10::DispatchKeySet keys(c10::DispatchKey::PrivateUse1);
  return at::detail::empty_strided_generic(size, stride, &g_allocator, keys, c10::dtype_or_default(dtype));
}

at::Tensor copyFrom(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  const bool blocking = onDevice(self) != onDevice(dst) && !non_blocking && t_in_kernel == 0;
  KernelScope scope;
  if (blocking) {
    g_blocking_copies.fetch_add(1);
    waitForDevice();
  }
  at::Tensor out = hostAlias(dst);
  out.copy_(hostAlias(self));
  return dst;
}

at::Tensor copyFromAndResize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return copyFrom(self, dst, false);
}

const at::Tensor& resize(const at::Tensor& self, at::IntArrayRef size, Optional<at::MemoryFormat> memory_format) {
  at::native::resize_impl_cpu_(self.unsafeGetTensorImpl(), size, {});
  if (memory_format) self.unsafeGetTensorImpl()->empty_tensor_restride(*memory_format);
  return self;
}

at::Tensor asStrided(const at::Tensor& self, at::IntArrayRef size, at::IntArrayRef stride,
                     Optional<int64_t> storage_offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor view(const at::Tensor& self, at::IntArrayRef size) { return at::native::view(self, size); }

at::Tensor reshapeAlias(const at::Tensor& self, at::IntArrayRef size, at::IntArrayRef stride) {
  return at::native::as_strided_tensorimpl(self, size, stride, self.storage_offset());
}

c10::Scalar localScalarDense(const at::Tensor& self) {
  if (t_in_kernel == 0) {
    g_scalar_reads.fetch_add(1);
    waitForDevice();
  }
  return at::_local_scalar_dense(hostAlias(self));
}

// A device tensor over the memory of CPU tensor `t`, which it keeps alive:
// the device's memory (a CPU kernel's result), counted as its allocator's.
at::Tensor deviceAlias(const at::Tensor& t) {
  auto* keep = new at::Tensor(t);
  const size_t bytes = t.storage().nbytes();
  {
    std::lock_guard<std::mutex> lock(g_memory_mutex);
    g_memory_now += bytes;
    g_memory_peak = std::max(g_memory_peak, g_memory_now);
  }
  return at::from_blob(
      t.data_ptr(), t.sizes(), t.strides(),
      [keep, bytes](void*) {
        {
          std::lock_guard<std::mutex> lock(g_memory_mutex);
          g_memory_now -= bytes;
        }
        delete keep;
      },
      t.options().device(c10::Device(kType, 0)), c10::Device(kType, 0));
}

// An argument as the CPU kernel takes it: device tensors (alone or in a
// list) as CPU aliases of their memory, this device as the CPU.
c10::IValue toHost(const c10::IValue& v) {
  if (v.isTensor() && onDevice(v.toTensor())) return hostAlias(v.toTensor());
  if (v.isDevice() && v.toDevice().type() == kType) return c10::IValue(c10::Device(at::kCPU));
  if (v.isTensorList()) {
    std::vector<at::Tensor> list = v.toTensorVector();
    bool here = false;
    for (at::Tensor& t : list) {
      if (t.defined() && onDevice(t)) {
        t = hostAlias(t);
        here = true;
      }
    }
    return here ? c10::IValue(list) : v;
  }
  return v;
}

// A result as the caller expects it: on this device, over the same memory.
c10::IValue toDevice(const c10::IValue& v) {
  if (v.isTensor() && v.toTensor().defined() && v.toTensor().is_cpu()) return deviceAlias(v.toTensor());
  if (v.isTensorList()) {
    std::vector<at::Tensor> list = v.toTensorVector();
    for (at::Tensor& t : list) {
      if (t.defined() && t.is_cpu()) t = deviceAlias(t);
    }
    return c10::IValue(list);
  }
  return v;
}

// Every other op: ATen's CPU kernel run in place on the device's memory (it
// is host memory), its results handed back as device tensors over the same
// memory: no copies, so a kernel here costs what it costs on the CPU. Ops
// with lists of optional tensors (index) take ATen's copying fallback, and
// so do out= ops whose output must grow (borrowed memory cannot): an empty
// output (what composite ops pass) is known to; another that must grow
// fails before writing anything and is run again (rare: a c10::Error is
// expensive: torch 1.13 takes a backtrace for it, 5 ms a step on the MLP);
// an op that needed it once takes the copying fallback from then on.
std::mutex g_regrow_mutex;
std::set<std::string> g_regrow;  // ops whose out= outputs must grow

bool mustRegrow(const c10::OperatorHandle& op) {
  std::lock_guard<std::mutex> lock(g_regrow_mutex);
  return !g_regrow.empty() && g_regrow.count(op.schema().name()) != 0;
}

// Tensor?[] (index.Tensor's indices), told by the type's kinds: its str()
// builds a string through a stringstream, for every argument of every
// kernel, a host cost no real device's launch has.
bool isOptionalTensorList(const c10::Type& type) {
  const auto* list = type.castRaw<c10::ListType>();
  if (list == nullptr) return false;
  const auto* optional = list->getElementType()->castRaw<c10::OptionalType>();
  return optional != nullptr && optional->getElementType()->kind() == c10::TypeKind::TensorType;
}

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  static const bool trace = envInt("TESTDEV_TRACE", 0) != 0;
  if (trace && t_in_kernel == 0) std::fprintf(stderr, "testdev kernel %s\n", op.schema().name().c_str());
  KernelScope scope;
  const auto& schema = op.schema();
  const size_t args = schema.arguments().size();
  const size_t first = stack->size() - args;
  for (size_t i = 0; i < args; ++i) {
    const auto& a = schema.arguments()[i];
    const c10::IValue& v = (*stack)[first + i];
    const bool empty_out = a.alias_info() != nullptr && a.alias_info()->isWrite() && v.isTensor() &&
                           v.toTensor().defined() && v.toTensor().numel() == 0;
    if (empty_out || isOptionalTensorList(*a.type())) {
      at::native::cpu_fallback(op, stack);
      return;
    }
  }
  if (mustRegrow(op)) {
    at::native::cpu_fallback(op, stack);
    return;
  }
  std::vector<c10::IValue> original(stack->begin() + static_cast<std::ptrdiff_t>(first), stack->end());
  // The CPU aliases stay owned here until the results are handed back: a
  // boxed out= kernel returning several Tensor& (aminmax.out) drops its
  // arguments before it copies the references it returns, so an alias the
  // stack alone owned would be read after it was freed.
  std::vector<c10::IValue> host(original.size());
  for (size_t i = first; i < stack->size(); ++i) (*stack)[i] = host[i - first] = toHost((*stack)[i]);
  try {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  } catch (const c10::Error& e) {
    if (std::string(e.what()).find("not resizable") == std::string::npos) throw;
    {
      std::lock_guard<std::mutex> lock(g_regrow_mutex);
      g_regrow.insert(op.schema().name());
    }
    stack->resize(first);
    stack->insert(stack->end(), original.begin(), original.end());
    at::native::cpu_fallback(op, stack);
    return;
  }
  const size_t returns = schema.returns().size();
  for (size_t r = 0; r < returns; ++r) {
    c10::IValue& value = (*stack)[stack->size() - returns + r];
    // A result that is a written argument (in-place, out=) is that argument.
    const c10::AliasInfo* alias = schema.returns()[r].alias_info();
    bool same = false;
    for (size_t i = 0; alias != nullptr && alias->isWrite() && i < args && !same; ++i) {
      const c10::AliasInfo* in = schema.arguments()[i].alias_info();
      if (in != nullptr && in->isWrite() && in->beforeSets() == alias->beforeSets()) {
        value = original[i];
        same = true;
      }
    }
    if (!same) value = toDevice(value);
  }
}

// The wrong kernel: the right one, then its first output scaled slightly
// (or, at call TESTDEV_NAN_CALL, given a NaN).
void wrongKernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  KernelScope scope;
  const size_t returns = op.schema().returns().size();
  at::native::cpu_fallback(op, stack);
  static const double scale = [] {
    const char* v = std::getenv("TESTDEV_WRONG_SCALE");
    return 1.0 + (v && *v ? std::atof(v) : 1e-3);
  }();
  static const long nan_call = [] {
    const char* v = std::getenv("TESTDEV_NAN_CALL");
    return v && *v ? std::atol(v) : -1L;
  }();
  static std::atomic<long> calls{0};
  c10::IValue& first = (*stack)[stack->size() - returns];
  if (!first.isTensor() || !first.toTensor().is_floating_point()) return;
  at::Tensor host = hostAlias(first.toTensor());
  if (nan_call < 0) {
    host.mul_(scale);
  } else if (calls++ == nan_call) {
    host.view(-1)[0].fill_(std::numeric_limits<double>::quiet_NaN());
  }
}

// TESTDEV_SUM_ORDER=reverse: sum() adds the elements in reverse order, as
// another device's reduction kernel would: right, but rounded differently.
at::Tensor reversedSum(const at::Tensor& self, Optional<at::ScalarType> dtype) {
  KernelScope scope;
  at::Tensor host = hostAlias(self).reshape(-1).flip(0);
  return deviceAlias(dtype ? host.sum(*dtype) : host.sum());
}

// TESTDEV_MATMUL=tf32: the factors rounded to TF32 (copies: the caller's
// tensors stay as they are), then the CPU kernel.
void tf32Kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& args = op.schema().arguments();
  const size_t first = stack->size() - args.size();
  const std::string name = op.schema().name();
  for (size_t i = 0; i < args.size(); ++i) {
    c10::IValue& v = (*stack)[first + i];
    if (!v.isTensor() || !onDevice(v.toTensor()) || v.toTensor().scalar_type() != at::kFloat) continue;
    if (!acc::replay::roundedArgument(name, args[i].name())) continue;
    at::Tensor host = hostAlias(v.toTensor()).contiguous().clone();
    acc::replay::roundMantissa(host.data_ptr<float>(), host.numel(), 10);
    v = deviceAlias(host);
  }
  fallback(op, stack);
}

// The device's own generator: 0/1 draws with probability `keep` of 1.
at::Tensor drawMask(at::IntArrayRef sizes, double keep, at::ScalarType dtype) {
  static std::mutex mutex;
  static std::mt19937_64 generator(static_cast<uint64_t>(envInt("TESTDEV_SEED", 1)));
  at::Tensor mask = at::empty(sizes, at::TensorOptions().dtype(at::kBool));
  bool* m = mask.data_ptr<bool>();
  std::bernoulli_distribution draw(std::min(1.0, std::max(0.0, keep)));
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (int64_t i = 0; i < mask.numel(); ++i) m[i] = draw(generator);
  }
  return dtype == at::kBool ? mask : mask.to(dtype);
}

at::Tensor& bernoulli(at::Tensor& self, double p, Optional<at::Generator>) {
  KernelScope scope;
  at::DisableRecordFunctionGuard kernel;  // a kernel: no ops of its own to see
  hostAlias(self).copy_(drawMask(self.sizes(), p, self.scalar_type()));
  return self;
}

// A fused dropout: mask and output in one kernel, as CUDA's.
std::tuple<at::Tensor, at::Tensor> nativeDropout(const at::Tensor& input, double p, Optional<bool> train) {
  KernelScope scope;
  at::DisableRecordFunctionGuard kernel;
  at::Tensor host = hostAlias(input);
  if ((train.has_value() && !*train) || p == 0) {
    return {deviceAlias(host.clone()), deviceAlias(at::ones(host.sizes(), host.options().dtype(at::kBool)))};
  }
  at::Tensor mask = drawMask(host.sizes(), 1 - p, at::kBool);
  const double scale = p >= 1 ? 0 : 1 / (1 - p);
  return {deviceAlias(host.mul(mask).mul_(scale)), deviceAlias(mask)};
}

}  // namespace
}  // namespace testdev

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("bernoulli_.float", TORCH_FN(testdev::bernoulli));
  m.impl("native_dropout", TORCH_FN(testdev::nativeDropout));
  m.impl("empty.memory_format", TORCH_FN(testdev::emptyMemoryFormat));
  m.impl("empty_strided", TORCH_FN(testdev::emptyStrided));
  m.impl("_copy_from", TORCH_FN(testdev::copyFrom));
  m.impl("_copy_from_and_resize", TORCH_FN(testdev::copyFromAndResize));
  m.impl("resize_", TORCH_FN(testdev::resize));
  m.impl("as_strided", TORCH_FN(testdev::asStrided));
  m.impl("view", TORCH_FN(testdev::view));
  m.impl("_reshape_alias", TORCH_FN(testdev::reshapeAlias));
  m.impl("_local_scalar_dense", TORCH_FN(testdev::localScalarDense));
  const char* order = std::getenv("TESTDEV_SUM_ORDER");
  if (order != nullptr && std::strcmp(order, "reverse") == 0) m.impl("sum", TORCH_FN(testdev::reversedSum));
  const char* matmul = std::getenv("TESTDEV_MATMUL");
  if (matmul != nullptr && std::strcmp(matmul, "tf32") == 0) {
    for (const char* name : {"mm", "addmm", "bmm"}) {
      m.impl(name, torch::CppFunction::makeFromBoxedFunction<&testdev::tf32Kernel>());
    }
  }
  const char* wrong = std::getenv("TESTDEV_WRONG_OP");
  if (wrong != nullptr && *wrong != '\0') {
    m.impl(wrong, torch::CppFunction::makeFromBoxedFunction<&testdev::wrongKernel>());
  }
}

// acc's statistics op (recorder/capture/device/fused_stats.h), as a vendor's plugin would
// give it a kernel of its own: here the CPU's, in place on the device's
// memory, one launch for a batch of tensors. TESTDEV_STATS_KERNEL=0 leaves
// it out, so acc takes ATen's generic reductions (RowStats), as on a device
// without one.
TORCH_LIBRARY_IMPL(acc, PrivateUse1, m) {
  const char* stats = std::getenv("TESTDEV_STATS_KERNEL");
  if (stats == nullptr || std::strcmp(stats, "0") != 0) {
    m.impl("tensor_stats", torch::CppFunction::makeFromBoxedFunction<&testdev::fallback>());
  }
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&testdev::fallback>());
}

extern "C" {
__attribute__((visibility("default"))) uint64_t testdev_blocking_copies() { return testdev::g_blocking_copies.load(); }
__attribute__((visibility("default"))) uint64_t testdev_scalar_reads() { return testdev::g_scalar_reads.load(); }
__attribute__((visibility("default"))) uint64_t testdev_synchronizations() { return testdev::g_synchronizations.load(); }
__attribute__((visibility("default"))) uint64_t testdev_events_recorded() { return testdev::g_events_recorded.load(); }
__attribute__((visibility("default"))) uint64_t testdev_kernels() { return testdev::g_kernels.load(); }
__attribute__((visibility("default"))) uint64_t testdev_kernel_ns() { return testdev::g_kernel_ns.load(); }
__attribute__((visibility("default"))) uint64_t testdev_event_queries() { return testdev::g_event_queries.load(); }
__attribute__((visibility("default"))) uint64_t testdev_memory_now() {
  std::lock_guard<std::mutex> lock(testdev::g_memory_mutex);
  return testdev::g_memory_now;
}
__attribute__((visibility("default"))) uint64_t testdev_memory_peak() {
  std::lock_guard<std::mutex> lock(testdev::g_memory_mutex);
  return testdev::g_memory_peak;
}
}
