// The per-thread pool behind the recorder's per-op path (record_pool.h): a
// recycled record must be indistinguishable from a new one, and once warm
// the path allocates nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "format/record.h"
#include "recorder/write/record_pool.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

// Counts every allocation of this test process (torch's included).
void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace acc::recorder {
namespace {

std::string encoded(const format::OpRecord& r) {
  std::string out;
  format::encode(r, out);
  return out;
}

// Every field of a record and of two tensors set away from its default, as
// an op's record would have them.
void fill(CapturedOp& r, int i) {
  r.index = 7 + i;
  r.name = "aten::some_long_operator_name." + std::to_string(i) + ".bwd";
  r.op = "aten::some_long_operator_name";
  r.pass = format::Pass::Backward;
  r.step = 3;
  r.op_number = 9;
  r.depth = 2;
  r.thread = 5;
  r.stack_id = 4;
  r.grad_fn = "SomeLongBackwardNodeName0";
  r.forward_name = "aten::some_long_operator_name.9.fwd";
  r.sequence_nr = 11;
  r.start_ns = 1;
  r.end_ns = 2;
  r.scalars.push_back({1, "a scalar's text, long enough to allocate"});
  r.has_overload = true;
  r.overload = "Tensor_out_with_a_long_name";
  r.has_module = true;
  r.module = "model.layers.0.self_attn.q_proj";
  r.has_autocast = true;
  r.autocast = "cuda:bfloat16,cpu:bfloat16";
  for (int k = 0; k < 2; ++k) {
    format::Tensor& t = record_pool::appendTensor(r);
    t.role = format::Role::GradOut;
    t.position = 1;
    t.item = 2;
    t.dtype = format::Dtype::BFloat16;
    t.device = "privateuseone:0";
    t.shape = {2, 3, 4, 5, 6, 7};
    t.strides = {5040, 840, 210, 42, 7, 1};
    t.has_stats = true;
    t.stats.max = 1;
    t.stats.checksum = 3;
    t.uninitialized = true;
    t.has_data = true;
    t.data_size = 4;
    t.data_offset = 8;
    t.data_in_stream = true;
    t.data = "bytes";
    t.content = 12;
    t.content_ref = true;
  }
}

TEST(RecordPool, ARecycledRecordIsANewOne) {
  const std::string fresh = encoded(CapturedOp());
  for (int i = 0; i < 3; ++i) {
    std::unique_ptr<CapturedOp> r = record_pool::take();
    EXPECT_EQ(encoded(*r), fresh) << "round " << i;
    EXPECT_TRUE(r->tensors.empty());
    EXPECT_FALSE(r->hold);
    fill(*r, i);
    record_pool::recycle(std::move(r));
  }
  // A recycled tensor is a default one too but for its device's name,
  // which the capture that takes it always sets (and copies only when it
  // differs): one of the record's own spares (its last op's tensors, kept
  // in it)...
  format::OpRecord expected;
  expected.tensors.emplace_back();
  std::unique_ptr<CapturedOp> r = record_pool::take();
  format::Tensor& t = record_pool::appendTensor(*r);
  EXPECT_EQ(t.device, "privateuseone:0");
  t.device.clear();
  EXPECT_EQ(encoded(*r), encoded(expected));
  EXPECT_GE(t.shape.capacity(), 6u) << "the tensor is not one of the record's spares";
  EXPECT_EQ(r->spare_tensors.size(), 1u);
  // ...or one of the pool's, where an op left spares unused (here the one
  // above: it took one of two).
  record_pool::recycle(std::move(r));
  CapturedOp other;
  format::Tensor& u = record_pool::appendTensor(other);
  EXPECT_EQ(u.device, "privateuseone:0");
  u.device.clear();
  EXPECT_EQ(encoded(other), encoded(expected));
  EXPECT_GE(u.shape.capacity(), 6u) << "the tensor did not come from the pool";
}

TEST(RecordPool, TheWarmPathAllocatesNothing) {
  for (int i = 0; i < 4; ++i) {  // warm-up: the pool fills
    std::unique_ptr<CapturedOp> r = record_pool::take();
    fill(*r, 1);
    record_pool::recycle(std::move(r));
    record_pool::giveBlock(record_pool::takeBlock(96), 96);
  }
  std::string name = "aten::some_long_operator_name.1.bwd";
  const uint64_t before = g_allocations.load();
  for (int i = 0; i < 100; ++i) {
    std::unique_ptr<CapturedOp> r = record_pool::take();
    r->name.assign(name);
    r->op.assign("aten::some_long_operator_name");
    r->module.assign("model.layers.0.self_attn.q_proj");
    for (int k = 0; k < 2; ++k) {
      format::Tensor& t = record_pool::appendTensor(*r);
      const int64_t shape[] = {2, 3, 4, 5, 6, 7};
      t.shape.assign(std::begin(shape), std::end(shape));
      t.strides.assign(std::begin(shape), std::end(shape));
    }
    record_pool::recycle(std::move(r));
    void* block = record_pool::takeBlock(96);
    record_pool::giveBlock(block, 96);
  }
  EXPECT_EQ(g_allocations.load() - before, 0u);
}

// A record taken on one thread and recycled on another, and blocks freed
// by a thread that did not take them: each thread's pool is its own.
TEST(RecordPool, ThreadsHandBackToTheirOwnPools) {
  std::unique_ptr<CapturedOp> r = record_pool::take();
  fill(*r, 0);
  void* block = record_pool::takeBlock(96);
  std::thread other([&] {
    record_pool::recycle(std::move(r));
    record_pool::giveBlock(block, 96);
    std::unique_ptr<CapturedOp> again = record_pool::take();
    EXPECT_EQ(encoded(*again), encoded(CapturedOp()));
  });
  other.join();  // its pool is freed at its exit (the leak checkers would say otherwise)
  EXPECT_EQ(encoded(*record_pool::take()), encoded(CapturedOp()));
}

// Device records are taken on an op thread and end on the writer's, which
// encodes them once their values arrive: the writer's pool would fill while
// the op thread's stayed empty and allocated every record. What a thread
// cannot keep goes to a shared depot that the op thread takes from.
TEST(RecordPool, RecordsEndingOnTheWriterServeTheOpThreadAgain) {
  constexpr int kInFlight = 48;  // more than a thread's own pool keeps
  std::vector<std::unique_ptr<CapturedOp>> batch;
  batch.reserve(kInFlight);
  std::atomic<int> phase{0};  // 1: the writer recycles the batch; 2: it did; 3: it stops
  std::thread writer([&] {
    for (;;) {
      const int p = phase.load();
      if (p == 3) return;
      if (p == 1) {
        for (std::unique_ptr<CapturedOp>& r : batch) record_pool::recycle(std::move(r));
        batch.clear();
        phase.store(2);
      }
      std::this_thread::yield();
    }
  });
  const std::string name = "aten::some_long_operator_name.1.fwd";
  uint64_t warm_allocations = 0;
  for (int round = 0; round < 12; ++round) {
    const uint64_t before = g_allocations.load();
    for (int i = 0; i < kInFlight; ++i) {
      std::unique_ptr<CapturedOp> r = record_pool::take();
      r->name.assign(name);
      r->op.assign("aten::some_long_operator_name");
      for (int k = 0; k < 2; ++k) {
        format::Tensor& t = record_pool::appendTensor(*r);
        const int64_t shape[] = {2, 3, 4, 5, 6, 7};
        t.shape.assign(std::begin(shape), std::end(shape));
      }
      batch.push_back(std::move(r));
    }
    if (round >= 6) warm_allocations += g_allocations.load() - before;  // the writer is idle here
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
    phase.store(0);
  }
  phase.store(3);
  writer.join();
  EXPECT_EQ(warm_allocations, 0u);
}

}  // namespace
}  // namespace acc::recorder
