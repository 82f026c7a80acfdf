// Micro benchmarks of the recorder's hot paths: what one recorded op costs
// the thread that runs it (statistics, capture, encoding, enqueueing) and
// what the writer thread pays per frame (zstd).
//
//   build/bin/acc-micro-bench
//   build/bin/acc-micro-bench --benchmark_filter=TensorStats
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "format/frame.h"
#include "format/record.h"
#include "recorder/watch/finite_check.h"
#include "recorder/write/ring_buffer.h"
#include "recorder/capture/tensor_capture.h"
#include "recorder/capture/cpu/tensor_stats.h"
#include "recorder/capture/device/stats_batch.h"

namespace {

using acc::format::OpRecord;

// ---------------------------------------------------------------- stats

at::Tensor floatTensor(int64_t numel) {
  at::manual_seed(0);
  return at::randn({numel}, at::TensorOptions().dtype(at::kFloat));
}

void setBytes(benchmark::State& state, const at::Tensor& t) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(t.nbytes()));
  state.counters["elements"] = static_cast<double>(t.numel());
  state.counters["threads"] = at::get_num_threads();
}

// The path the recorder takes for a CPU tensor (one fused pass).
void BM_TensorStats(benchmark::State& state) {
  at::Tensor t = floatTensor(state.range(0));
  for (auto _ : state) {
    acc::format::Stats s = acc::recorder::tensorStats(t);
    benchmark::DoNotOptimize(s);
  }
  setBytes(state, t);
}

// The ATen-reduction path (used for non-CPU tensors), for comparison.
void BM_TensorStatsAten(benchmark::State& state) {
  at::Tensor t = floatTensor(state.range(0));
  for (auto _ : state) {
    acc::format::Stats s = acc::recorder::tensorStatsAten(t);
    benchmark::DoNotOptimize(s);
  }
  setBytes(state, t);
}

// A 4-d activation sliced along the channels (not contiguous): the recorder
// sees such views as op arguments and copies them before the fused pass.
void BM_TensorStatsStrided(benchmark::State& state) {
  at::manual_seed(0);
  const int64_t channels = 64;
  const int64_t side = state.range(0);
  at::Tensor base = at::randn({8, 2 * channels, side, side});
  at::Tensor t = base.narrow(1, 0, channels);
  for (auto _ : state) {
    acc::format::Stats s = acc::recorder::tensorStats(t);
    benchmark::DoNotOptimize(s);
  }
  setBytes(state, t);
}

// A transposed square weight (side x side), as linear's backward reads it:
// up to 32,768 elements such views are read in place through a small
// buffer; larger ones are copied by contiguous() first.
void BM_TensorStatsTransposed(benchmark::State& state) {
  at::manual_seed(0);
  at::Tensor t = at::randn({state.range(0), state.range(0)}).t();
  for (auto _ : state) {
    acc::format::Stats s = acc::recorder::tensorStats(t);
    benchmark::DoNotOptimize(s);
  }
  setBytes(state, t);
}

// Attention's heads swapped with the tokens (batch x heads, tokens, head
// size), as multi-head attention reads q, k and v: rows of head-size
// elements side by side, read in place through the buffer.
void BM_TensorStatsHeads(benchmark::State& state) {
  at::manual_seed(0);
  const int64_t heads = 16, tokens = state.range(0), head_size = 16;
  at::Tensor t = at::randn({tokens, heads, head_size}).transpose(0, 1);
  for (auto _ : state) {
    acc::format::Stats s = acc::recorder::tensorStats(t);
    benchmark::DoNotOptimize(s);
  }
  setBytes(state, t);
}

// One tensor argument as the observer records it, metadata only (level 0),
// with statistics (1) and with data (2).
void BM_CaptureTensor(benchmark::State& state) {
  at::Tensor t = floatTensor(state.range(0));
  const int level = static_cast<int>(state.range(1));
  at::NoGradGuard no_grad;
  for (auto _ : state) {
    acc::format::Tensor out = acc::recorder::captureTensor(t, acc::format::Role::Input, 0, 0, level);
    benchmark::DoNotOptimize(out);
  }
  // Level 0 reads no element: bytes per second would be meaningless there.
  if (level >= 1) setBytes(state, t);
  state.counters["elements"] = static_cast<double>(t.numel());
}

// ACC_WATCH=naninf's check of a CPU output (recorder/watch/finite_check.h): a
// scan of exponent bits, float32 and bfloat16, all finite (the whole scan).
void BM_HostAllFinite(benchmark::State& state) {
  at::Tensor t = floatTensor(state.range(0));
  if (state.range(1) == 16) t = t.to(at::kBFloat16);
  for (auto _ : state) benchmark::DoNotOptimize(acc::recorder::hostAllFinite(t));
  setBytes(state, t);
}

// What joining a device statistics batch costs the op's thread when its
// tensors are large against the batch's memory bound (ACC_BUFFER_MB / 8):
// the bound is looked at every eighth of it joined, here at every tensor,
// as on a GPT-2-sized decoder's activations. range(0) tensors join one batch
// (on the CPU device, whose kernels the unit tests use); the program holds
// them all, so only the look itself runs, not a launch.
void BM_StatsBatchJoin(benchmark::State& state) {
  const int64_t count = state.range(0);
  std::vector<at::Tensor> held;
  for (int64_t i = 0; i < count; ++i) held.push_back(at::zeros({2048}));
  for (auto _ : state) {
    acc::recorder::StatsBatch batch(1 << 20, 8 * held[0].nbytes());
    for (const at::Tensor& t : held) benchmark::DoNotOptimize(batch.add(t));
    state.PauseTiming();
    batch.flush();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * count);
}

#define ACC_SIZES Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20)->Arg(1 << 24)
BENCHMARK(BM_HostAllFinite)->ArgNames({"numel", "bits"})->ArgsProduct({{1 << 10, 1 << 16, 1 << 20, 1 << 24}, {32, 16}});
BENCHMARK(BM_TensorStats)->ACC_SIZES;
BENCHMARK(BM_TensorStatsAten)->ACC_SIZES;
BENCHMARK(BM_TensorStatsStrided)->Arg(14)->Arg(56);
BENCHMARK(BM_TensorStatsTransposed)->Arg(64)->Arg(256)->Arg(257);
BENCHMARK(BM_TensorStatsHeads)->Arg(32)->Arg(128);
BENCHMARK(BM_StatsBatchJoin)->Arg(64)->Arg(512);
BENCHMARK(BM_CaptureTensor)
    ->ArgNames({"numel", "level"})
    ->Args({1 << 10, 0})->Args({1 << 10, 1})->Args({1 << 10, 2})
    ->Args({1 << 20, 0})->Args({1 << 20, 1})->Args({1 << 20, 2});

// ---------------------------------------------------------------- encoding

acc::format::Tensor tensorMeta(acc::format::Role role, uint32_t position,
                               std::vector<int64_t> shape, std::mt19937_64& rng) {
  acc::format::Tensor t;
  t.role = role;
  t.position = position;
  t.dtype = acc::format::Dtype::Float32;
  t.device = "cpu";
  t.shape = std::move(shape);
  t.strides.assign(t.shape.size(), 1);
  for (size_t i = t.shape.size(); i-- > 1;) t.strides[i - 1] = t.strides[i] * t.shape[i];
  std::normal_distribution<double> normal;
  t.has_stats = true;
  t.stats.min = -3 + normal(rng);
  t.stats.max = 3 + normal(rng);
  t.stats.mean = normal(rng) / 100;
  t.stats.norm = 100 + normal(rng);
  t.stats.checksum = rng();
  return t;
}

// What a forward conv2d of resnet18 records at level 1: input, weight and
// output with statistics, and the scalar arguments.
OpRecord typicalRecord(uint64_t index, std::mt19937_64& rng) {
  OpRecord r;
  r.index = index;
  r.op_number = index % 200;
  r.op = "aten::conv2d";
  r.name = r.op + "." + std::to_string(r.op_number) + ".fwd";
  r.pass = acc::format::Pass::Forward;
  r.step = 3;
  r.thread = 1;
  r.sequence_nr = static_cast<int64_t>(1000 + index);
  r.start_ns = 1700000000000000000ull + index * 250000;
  r.end_ns = r.start_ns + 180000 + rng() % 1000;
  r.scalars = {{3, "[1, 1]"}, {4, "[1, 1]"}, {5, "[1, 1]"}, {6, "1"}};
  r.tensors.push_back(tensorMeta(acc::format::Role::Input, 0, {8, 64, 28, 28}, rng));
  r.tensors.push_back(tensorMeta(acc::format::Role::Input, 1, {64, 64, 3, 3}, rng));
  r.tensors.push_back(tensorMeta(acc::format::Role::Output, 0, {8, 64, 28, 28}, rng));
  return r;
}

void BM_EncodeOpRecord(benchmark::State& state) {
  std::mt19937_64 rng(1);
  OpRecord r = typicalRecord(42, rng);
  std::string out;
  int64_t bytes = 0;
  for (auto _ : state) {
    // A fresh string per record: the worst case (the recorder encodes into
    // buffers the writer hands back).
    std::string encoded;
    acc::format::encode(r, encoded);
    bytes += static_cast<int64_t>(encoded.size());
    benchmark::DoNotOptimize(encoded);
  }
  state.SetBytesProcessed(bytes);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_EncodeOpRecord);

// Building the record itself (strings, vectors) before encoding: the other
// half of the per-op bookkeeping.
void BM_BuildAndEncodeOpRecord(benchmark::State& state) {
  std::mt19937_64 rng(1);
  uint64_t index = 0;
  for (auto _ : state) {
    auto r = std::make_unique<OpRecord>(typicalRecord(index++, rng));
    auto encoded = std::make_unique<std::string>();
    acc::format::encode(*r, *encoded);
    benchmark::DoNotOptimize(encoded);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_BuildAndEncodeOpRecord);

// ---------------------------------------------------------------- frames

std::string recordsPayload(size_t bytes) {
  std::mt19937_64 rng(7);
  std::string payload;
  uint64_t index = 0;
  while (payload.size() < bytes) acc::format::encode(typicalRecord(index++, rng), payload);
  return payload;
}

void BM_FrameEncode(benchmark::State& state) {
  const std::string payload = recordsPayload(1 << 20);
  acc::format::FrameEncoder encoder(static_cast<int>(state.range(0)));
  std::string frame;
  for (auto _ : state) {
    encoder.encode(payload, frame);
    benchmark::DoNotOptimize(frame);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(payload.size()));
  state.counters["ratio"] = static_cast<double>(payload.size()) / static_cast<double>(frame.size());
}
BENCHMARK(BM_FrameEncode)->ArgName("zstd_level")->Arg(1)->Arg(3)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------- queue

constexpr size_t kRecordBytes = 300;  // about one encoded level-1 record

// Push then pop on one thread: the uncontended cost of both halves.
void BM_RingBufferPushPopSameThread(benchmark::State& state) {
  acc::recorder::RingBuffer queue(1 << 16, 256ull << 20);
  const std::string record(kRecordBytes, 'x');
  for (auto _ : state) {
    auto item = std::make_unique<std::string>(record);
    queue.tryPush(item);
    auto out = queue.tryPop();
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_RingBufferPushPopSameThread);

// Producers (the benchmark threads, as op threads) push records that one
// consumer thread (as the writer) pops and frees. Items per second is the
// rate the queue sustains end to end.
struct QueueFixture {
  std::unique_ptr<acc::recorder::RingBuffer<>> queue;
  std::thread consumer;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> popped{0};
  std::atomic<uint64_t> full{0};
};
QueueFixture* g_queue = nullptr;

void startConsumer(const benchmark::State&) {
  g_queue = new QueueFixture;
  g_queue->queue = std::make_unique<acc::recorder::RingBuffer<>>(1 << 16, 256ull << 20);
  g_queue->consumer = std::thread([q = g_queue] {
    uint64_t n = 0;
    for (;;) {
      if (auto item = q->queue->tryPop()) {
        ++n;
        continue;
      }
      if (q->stop.load(std::memory_order_acquire)) break;
      std::this_thread::yield();
    }
    q->popped.store(n);
  });
}

void stopConsumer(const benchmark::State&) {
  g_queue->stop.store(true, std::memory_order_release);
  g_queue->consumer.join();
  delete g_queue;
  g_queue = nullptr;
}

void BM_RingBufferProducers(benchmark::State& state) {
  acc::recorder::RingBuffer<>& queue = *g_queue->queue;
  const std::string record(kRecordBytes, 'x');
  uint64_t full = 0;
  for (auto _ : state) {
    auto item = std::make_unique<std::string>(record);
    while (!queue.tryPush(item)) {
      ++full;
      std::this_thread::yield();
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["full_retries"] = benchmark::Counter(static_cast<double>(full), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_RingBufferProducers)
    ->Setup(startConsumer)
    ->Teardown(stopConsumer)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
