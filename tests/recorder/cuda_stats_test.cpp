// acc's CUDA statistics kernel (recorder/capture/device/cuda_stats_kernel.cu) without a
// GPU: compiled here as host C++, each block's 256 threads run as host
// threads meeting at a barrier for __syncthreads(), over the descriptors and
// buffer layout the recorder uploads (planCudaStats). It must give what the
// fused CPU pass gives for every element type, for strided, expanded,
// permuted and complex tensors and for tensors of many blocks, whatever
// order the blocks run in. Where NVRTC is installed, the same source must
// also compile for the GPU.
#include <ATen/ATen.h>
#include <c10/util/Half.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "recorder/capture/device/cuda_driver.h"
#include "recorder/capture/device/cuda_stats.h"
#include "recorder/capture/device/cuda_stats_kernel.h"
#include "recorder/capture/device/cuda_stats_kernel_source.h"
#include "recorder/capture/cpu/tensor_stats.h"

// The CUDA builtins the kernel uses, for host threads.
namespace host_gpu {
struct Index {
  unsigned x = 0;
};
thread_local Index threadIdx, blockIdx;
pthread_barrier_t* block_barrier = nullptr;
inline void __syncthreads() { pthread_barrier_wait(block_barrier); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline float __int_as_float(int b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
inline double __longlong_as_double(long long b) {
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}
inline float halfToFloat(unsigned short b) { return static_cast<float>(c10::Half(b, c10::Half::from_bits())); }
using std::fabs;

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static  // one block runs at a time: its threads share the function's statics
#include "recorder/capture/device/cuda_stats_kernel.cu"
#undef __global__
#undef __device__
#undef __forceinline__
#undef __launch_bounds__
#undef __shared__
}  // namespace host_gpu

namespace acc::recorder {
namespace {

// Runs the kernel as the recorder launches it, blocks in `order` (all of
// them, each once), and returns the result rows.
std::vector<double> runOnHost(const std::vector<at::Tensor>& tensors, bool reversed = false) {
  const CudaStatsPlan plan = planCudaStats(tensors, true);
  EXPECT_TRUE(plan.aten.empty());
  std::vector<uint8_t> device(plan.upload.size() + static_cast<size_t>(plan.partial_bytes), 0xcd);
  std::memcpy(device.data(), plan.upload.data(), plan.upload.size());
  std::vector<double> out(tensors.size() * kDeviceStatsSize, -12345.0);
  const auto* descs = reinterpret_cast<const host_gpu::TensorDesc*>(device.data());
  auto* counts = reinterpret_cast<unsigned*>(device.data() + plan.counts_offset);
  auto* partials = reinterpret_cast<host_gpu::Partial*>(device.data() + plan.upload.size());
  for (int64_t k = 0; k < plan.blocks; ++k) {
    const unsigned block = static_cast<unsigned>(reversed ? plan.blocks - 1 - k : k);
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, nullptr, cuda::kThreads);
    host_gpu::block_barrier = &barrier;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < static_cast<unsigned>(cuda::kThreads); ++t) {
      threads.emplace_back([&, t] {
        host_gpu::threadIdx.x = t;
        host_gpu::blockIdx.x = block;
        host_gpu::acc_tensor_stats(descs, plan.tensors, counts, partials, out.data());
      });
    }
    for (std::thread& t : threads) t.join();
    pthread_barrier_destroy(&barrier);
  }
  return out;
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void expectRowsMatchTheFusedPass(const std::vector<at::Tensor>& tensors, const std::vector<double>& rows) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    SCOPED_TRACE("tensor " + std::to_string(i) + " " + std::string(c10::toString(tensors[i].scalar_type())) + " " +
                 c10::str(tensors[i].sizes()) + " strides " + c10::str(tensors[i].strides()));
    double want[kDeviceStatsSize];
    fusedStatsInto(tensors[i], want);
    const double* got = rows.data() + i * kDeviceStatsSize;
    EXPECT_EQ(0, std::memcmp(want + 4, got + 4, 3 * sizeof(double))) << "NaN, Inf counts or checksum";
    EXPECT_TRUE(same(want[0], got[0])) << want[0] << " vs " << got[0];
    EXPECT_TRUE(same(want[1], got[1])) << want[1] << " vs " << got[1];
    for (int k : {2, 3}) {
      if (!std::isfinite(want[k])) EXPECT_TRUE(same(want[k], got[k])) << want[k] << " vs " << got[k];
      else EXPECT_NEAR(want[k], got[k], 1e-12 * std::max(1.0, std::fabs(want[3]))) << "value " << k;
    }
  }
}

std::vector<at::Tensor> everyType() {
  at::manual_seed(7);
  std::vector<at::Tensor> t;
  for (at::ScalarType type : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    at::Tensor x = at::randn({1000}, at::TensorOptions().dtype(type)) * 3;
    x[5] = std::numeric_limits<double>::quiet_NaN();
    x[17] = std::numeric_limits<double>::infinity();
    x[18] = -std::numeric_limits<double>::infinity();
    t.push_back(x);
    t.push_back(at::randn({33, 7}, at::TensorOptions().dtype(type)));
  }
  t.push_back(at::rand({999}) > 0.5);
  for (at::ScalarType type : {at::kByte, at::kChar, at::kShort, at::kInt, at::kLong}) {
    t.push_back(at::randint(-100, 100, {777}, at::TensorOptions().dtype(at::kLong)).to(type));
  }
  t.push_back(at::randint(-(int64_t{1} << 62), int64_t{1} << 62, {300}, at::TensorOptions().dtype(at::kLong)));
  return t;
}

TEST(CudaStatsKernel, EveryTypeAsTheFusedPass) {
  const std::vector<at::Tensor> t = everyType();
  expectRowsMatchTheFusedPass(t, runOnHost(t));
}

TEST(CudaStatsKernel, StridedExpandedPermutedAndComplexTensors) {
  at::manual_seed(3);
  const at::Tensor base = at::randn({40, 30, 6});
  std::vector<at::Tensor> t = {
      base.transpose(0, 1),                            // two dimensions after merging
      base.permute({2, 0, 1}),                         // three
      base.narrow(1, 3, 20),                           // rows with gaps
      base.select(2, 4),                               // a step of 6
      at::randn({50, 1}).expand({50, 40}),             // a zero stride
      at::randn({64}).index_select(0, at::arange(0, 64, 3)),
      at::randn({5, 1, 1, 7}),                         // size-1 dimensions dropped
      at::randn({0, 4}),                               // empty
      at::scalar_tensor(2.5),                          // no dimension
      at::view_as_real(at::randn({20, 3}, at::kComplexFloat)),
  };
  std::vector<double> rows = runOnHost(t);
  expectRowsMatchTheFusedPass(t, rows);
  // A complex tensor itself is summarised as its reals.
  const at::Tensor z = at::randn({20, 3}, at::kComplexFloat);
  std::vector<double> complex_rows = runOnHost({z});
  expectRowsMatchTheFusedPass({at::view_as_real(z)}, complex_rows);
}

// Tensors of several blocks: the last block merges the partials, in chunk
// order, so the order blocks run in changes no bit of the result.
TEST(CudaStatsKernel, ManyBlocksMergeTheSameInAnyOrder) {
  at::manual_seed(5);
  const int64_t n = 2 * cuda::kChunk + 1234;
  at::Tensor big = at::randn({n});
  big[cuda::kChunk + 7] = std::numeric_limits<double>::quiet_NaN();
  std::vector<at::Tensor> t = {at::randn({10}), big, at::randn({n}, at::kBFloat16).t(),
                               at::randn({n / 100, 100}).t(), at::randn({3})};
  const std::vector<double> forward = runOnHost(t);
  expectRowsMatchTheFusedPass(t, forward);
  const std::vector<double> backward = runOnHost(t, /*reversed=*/true);
  EXPECT_EQ(0, std::memcmp(forward.data(), backward.data(), forward.size() * sizeof(double)));
}

TEST(CudaStatsKernel, DescriptorsMergeContiguousDimensions) {
  const at::Tensor x = at::randn({4, 5, 6});
  std::optional<cuda::TensorDesc> d = cudaTensorDesc(x, 3);
  ASSERT_TRUE(d);
  EXPECT_EQ(1, d->ndim);
  EXPECT_EQ(120, d->sizes[0]);
  EXPECT_EQ(1, d->strides[0]);
  EXPECT_EQ(3, d->first_chunk);
  EXPECT_EQ(1, d->chunks);
  d = cudaTensorDesc(x.transpose(1, 2), 0);
  ASSERT_TRUE(d);
  EXPECT_EQ(3, d->ndim);
  d = cudaTensorDesc(at::randn({cuda::kChunk + 1}), 0);
  EXPECT_EQ(2, d->chunks);
  // Seven dimensions that no merging joins, and a type the kernel does
  // not read, take ATen's reductions.
  const at::Tensor seven = at::randn({2, 2, 2, 2, 2, 2, 2}).permute({6, 5, 4, 3, 2, 1, 0});
  EXPECT_FALSE(cudaTensorDesc(seven, 0));
  EXPECT_FALSE(cudaTensorDesc(at::randn({3}, at::kComplexFloat), 0));
  const CudaStatsPlan plan = planCudaStats({x, seven}, true);
  EXPECT_EQ(1, plan.tensors);
  EXPECT_EQ(std::vector<int64_t>{1}, plan.aten);
  EXPECT_TRUE(planCudaStats({x}, false).aten == std::vector<int64_t>{0});
}

TEST(CudaStatsKernel, CompilesWithNvrtc) {
  if (cuda::libraries().nvrtc_path.empty()) GTEST_SKIP() << cuda::libraries().error;
  std::string ptx, error;
  ASSERT_TRUE(cuda::compileToPtx(cuda::kStatsKernelSource, "compute_75", ptx, error)) << error;
  EXPECT_NE(std::string::npos, ptx.find(".entry acc_tensor_stats")) << ptx.substr(0, 400);
  // And fails with the compiler's message on a broken source.
  EXPECT_FALSE(cuda::compileToPtx("extern \"C\" __global__ void k() { undeclared(); }", "compute_75", ptx, error));
  EXPECT_NE(std::string::npos, error.find("undeclared")) << error;
}

}  // namespace
}  // namespace acc::recorder
