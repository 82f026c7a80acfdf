#include "recorder/capture/device/cuda_stats.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "recorder/capture/device/cuda_driver.h"
#include "recorder/capture/cpu/tensor_stats.h"

namespace acc::recorder {
namespace {

// The kernel source repeats these layouts.
static_assert(sizeof(cuda::TensorDesc) == 144, "cuda_stats_kernel.h: TensorDesc's layout changed");
static_assert(offsetof(cuda::TensorDesc, type) == 40 && offsetof(cuda::TensorDesc, sizes) == 48,
              "cuda_stats_kernel.h: TensorDesc's layout changed");
static_assert(kDeviceStatsSize == 7 && cuda::kPartialBytes == 7 * sizeof(double),
              "the kernel writes rows of 7 values");

std::optional<int32_t> kernelType(at::ScalarType type) {
  using K = cuda::KernelType;
  switch (type) {
    case at::kFloat: return static_cast<int32_t>(K::Float);
    case at::kDouble: return static_cast<int32_t>(K::Double);
    case at::kHalf: return static_cast<int32_t>(K::Half);
    case at::kBFloat16: return static_cast<int32_t>(K::BFloat16);
    case at::kBool: return static_cast<int32_t>(K::Bool);
    case at::kByte: return static_cast<int32_t>(K::Byte);
    case at::kChar: return static_cast<int32_t>(K::Char);
    case at::kShort: return static_cast<int32_t>(K::Short);
    case at::kInt: return static_cast<int32_t>(K::Int);
    case at::kLong: return static_cast<int32_t>(K::Long);
    default: return std::nullopt;
  }
}

int64_t alignUp(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

// The op's CUDA kernel: one descriptor upload and one launch for the
// tensors the kernel reads; ATen's reductions for any other (a type it does
// not know, too many dimensions), each into its own row.
at::Tensor tensorStatsCuda(at::TensorList tensors) {
  const int64_t n = static_cast<int64_t>(tensors.size());
  if (n == 0) return at::empty({0, kDeviceStatsSize}, at::TensorOptions().dtype(at::kDouble).device(at::kCUDA));
  const c10::Device device = tensors[0].device();
  at::Tensor out = at::empty({n, kDeviceStatsSize}, at::TensorOptions().dtype(at::kDouble).device(device));
  std::string error;
  void* kernel = cuda::statsKernel(device.index(), error);
  const CudaStatsPlan plan = planCudaStats(tensors, kernel != nullptr);
  if (plan.tensors > 0) {
    const c10::Stream stream = c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
    void* native = nullptr;
    if (!cuda::nativeStream(stream, native, error)) throw std::runtime_error("acc::tensor_stats: " + error);
    const auto upload = static_cast<int64_t>(plan.upload.size());
    at::Tensor host = at::empty({upload}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
    std::memcpy(host.data_ptr(), plan.upload.data(), plan.upload.size());
    at::Tensor buffer = at::empty({upload + plan.partial_bytes}, at::TensorOptions().dtype(at::kByte).device(device));
    buffer.narrow(0, 0, upload).copy_(host, /*non_blocking=*/true);
    auto* base = static_cast<uint8_t*>(buffer.data_ptr());
    void* descs = base;
    int count = plan.tensors;
    void* counts = base + plan.counts_offset;
    void* partials = base + upload;
    void* result = out.data_ptr();
    void* args[] = {&descs, &count, &counts, &partials, &result};
    if (!cuda::launch(device.index(), kernel, static_cast<uint32_t>(plan.blocks), cuda::kThreads, native, args,
                      error)) {
      throw std::runtime_error("acc::tensor_stats: " + error);
    }
  }
  for (int64_t i : plan.aten) out.select(0, i).copy_(deviceStats(tensors[i]));
  return out;
}

}  // namespace

CudaStatsPlan planCudaStats(at::TensorList tensors, bool kernel) {
  CudaStatsPlan plan;
  std::vector<cuda::TensorDesc> descs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    if (t.device() != tensors[0].device()) throw std::invalid_argument("acc::tensor_stats: tensors on more than one device");
    std::optional<cuda::TensorDesc> d;
    if (kernel) d = cudaTensorDesc(t.is_complex() ? at::view_as_real(t) : t, plan.blocks);
    if (!d) {
      plan.aten.push_back(static_cast<int64_t>(i));
      continue;
    }
    d->row = static_cast<int64_t>(i);
    plan.blocks += d->chunks;
    descs.push_back(*d);
  }
  if (plan.blocks > INT32_MAX) throw std::length_error("acc::tensor_stats: a batch of more than 2^31 blocks");
  plan.tensors = static_cast<int32_t>(descs.size());
  const auto k = static_cast<int64_t>(descs.size());
  plan.counts_offset = k * static_cast<int64_t>(sizeof(cuda::TensorDesc));
  plan.upload.assign(static_cast<size_t>(alignUp(plan.counts_offset + k * static_cast<int64_t>(sizeof(uint32_t)), 8)), 0);
  if (k > 0) std::memcpy(plan.upload.data(), descs.data(), static_cast<size_t>(plan.counts_offset));
  plan.partial_bytes = plan.blocks > k ? plan.blocks * static_cast<int64_t>(cuda::kPartialBytes) : 0;
  return plan;
}

std::optional<cuda::TensorDesc> cudaTensorDesc(const at::Tensor& t, int64_t first_chunk) {
  const std::optional<int32_t> type = kernelType(t.scalar_type());
  if (!type || t.layout() != at::kStrided) return std::nullopt;
  cuda::TensorDesc d{};
  d.data = reinterpret_cast<uint64_t>(t.data_ptr());
  d.numel = t.numel();
  d.first_chunk = first_chunk;
  d.chunks = std::max<int64_t>(1, (d.numel + cuda::kChunk - 1) / cuda::kChunk);
  d.type = *type;
  // Dimensions of size 1 dropped; each merged into the one before it where
  // stepping over it whole is one step of that one.
  int64_t sizes[64], strides[64];
  int ndim = 0;
  for (int64_t k = 0; k < t.dim(); ++k) {
    const int64_t size = t.size(k), stride = t.stride(k);
    if (size == 1) continue;
    if (ndim > 0 && strides[ndim - 1] == stride * size) {
      sizes[ndim - 1] *= size;
      strides[ndim - 1] = stride;
    } else {
      if (ndim == 64) return std::nullopt;
      sizes[ndim] = size;
      strides[ndim] = stride;
      ++ndim;
    }
  }
  if (ndim == 0 || d.numel == 0) {
    sizes[0] = d.numel;
    strides[0] = 1;
    ndim = 1;
  }
  if (ndim > cuda::kMaxDims) return std::nullopt;
  d.ndim = ndim;
  for (int k = 0; k < ndim; ++k) {
    d.sizes[k] = sizes[k];
    d.strides[k] = strides[k];
  }
  return d;
}

bool cudaStatsReady(const c10::Device& device) {
  constexpr int kDevices = 64;
  static std::atomic<int8_t> known[kDevices] = {};  // 0 unknown, 1 ready, -1 not
  const int i = device.has_index() ? device.index() : 0;
  if (i < 0 || i >= kDevices) return false;
  if (const int8_t k = known[i].load(std::memory_order_relaxed)) return k > 0;
  std::string error;
  bool ready = cuda::statsKernel(i, error) != nullptr;
  void* native = nullptr;
  try {
    const c10::Device d(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(i));
    ready = ready && cuda::nativeStream(c10::impl::getDeviceGuardImpl(d.type())->getStream(d), native, error);
  } catch (...) {
    ready = false;
  }
  known[i].store(ready ? 1 : -1, std::memory_order_relaxed);
  return ready;
}

std::string cudaStatsKernel() { return cuda::statsKernelDescription(); }

}  // namespace acc::recorder

TORCH_LIBRARY_IMPL(acc, CUDA, m) {
  m.impl("tensor_stats", TORCH_FN(acc::recorder::tensorStatsCuda));
}
