// The content store may answer only for the same tensor at the same version
// with the same bytes; every write it cannot see through the version counter
// must make it capture the tensor again.
#include <gtest/gtest.h>

#include <ATen/core/LegacyTypeDispatch.h>

#include <malloc.h>

#include <cstring>
#include <string>

#include "recorder/capture/content_store.h"

namespace acc::recorder {
namespace {

// One record's capture: identify the tensor, then queue the record.
ContentStore::Content record(ContentStore& store, const at::Tensor& t) {
  std::vector<ContentStore::Pending> pending;
  ContentStore::Content c = store.identify(t, pending);
  store.publish(pending);
  return c;
}

TEST(ContentStoreTest, AQueuedContentIsReferredTo) {
  ContentStore store;
  at::Tensor t = at::rand({64});
  ContentStore::Content first = record(store, t);
  ASSERT_NE(first.id, 0u);
  EXPECT_FALSE(first.ref);
  ContentStore::Content again = record(store, t);
  EXPECT_TRUE(again.ref);
  EXPECT_EQ(again.id, first.id);
  EXPECT_EQ(store.countsJson()["referenced"], 1);
}

TEST(ContentStoreTest, AContentIsReferableOnlyOnceItsRecordIsQueued) {
  ContentStore store;
  at::Tensor t = at::rand({64});
  std::vector<ContentStore::Pending> dropped;
  ASSERT_FALSE(store.identify(t, dropped).ref);  // its record never reaches the writer
  EXPECT_FALSE(record(store, t).ref);
}

TEST(ContentStoreTest, TheSameRecordMayReferToItsOwnEarlierTensor) {
  ContentStore store;
  at::Tensor t = at::rand({64});
  std::vector<ContentStore::Pending> pending;
  ContentStore::Content input = store.identify(t, pending);
  ContentStore::Content output = store.identify(t, pending);
  EXPECT_TRUE(output.ref);
  EXPECT_EQ(output.id, input.id);
}

TEST(ContentStoreTest, InPlaceWritesAndViewsAreOtherContents) {
  ContentStore store;
  at::Tensor t = at::rand({8, 8});
  const uint64_t before = record(store, t).id;
  t.add_(1);  // bumps the version counter
  ContentStore::Content after = record(store, t);
  EXPECT_FALSE(after.ref);
  EXPECT_NE(after.id, before);
  at::Tensor row = t[2];  // same storage and version, another geometry
  EXPECT_FALSE(record(store, row).ref);
  at::Tensor col = t.select(1, 3);
  EXPECT_FALSE(record(store, col).ref);
  EXPECT_TRUE(record(store, col).ref);
  t.mul_(2);  // a write through the base is seen by the view
  EXPECT_FALSE(record(store, col).ref);
}

// A view, reshape, detach or unsqueeze of a contiguous tensor holds its
// bytes in the same order: the same content, in the record that makes the
// view and in later ones, until a write through either moves their shared
// version. Views of other bytes, order or type are other contents.
TEST(ContentStoreTest, ContiguousViewsOfAContentAreThatContent) {
  ContentStore store;
  at::Tensor t = at::rand({8, 8});
  std::vector<ContentStore::Pending> pending;
  const ContentStore::Content base = store.identify(t, pending);
  const ContentStore::Content flat = store.identify(t.view({64}), pending);  // a view op's input, then output
  EXPECT_TRUE(flat.ref);
  EXPECT_EQ(flat.id, base.id);
  store.publish(pending);
  for (const at::Tensor& view : {t.reshape({4, 16}), t.detach(), t.unsqueeze(0), t.view({2, 4, 8})}) {
    const ContentStore::Content c = record(store, view);
    EXPECT_TRUE(c.ref);
    EXPECT_EQ(c.id, base.id);
  }
  EXPECT_FALSE(record(store, t[0]).ref);              // its first row: fewer elements
  EXPECT_FALSE(record(store, t.t()).ref);             // another order
  EXPECT_FALSE(record(store, t.view(at::kInt)).ref);  // another type
  at::Tensor view = t.view({64});
  view.add_(1);  // through the view: the base's version moves too
  const ContentStore::Content after = record(store, t);
  EXPECT_FALSE(after.ref);
  EXPECT_NE(after.id, base.id);
  EXPECT_EQ(record(store, t.view({16, 4})).id, after.id);
  // A write no counter sees is caught by the sample, through a view too.
  std::memset(t.data_ptr(), 0, 64 * sizeof(float));
  const ContentStore::Content raw = record(store, t.view({64}));
  EXPECT_FALSE(raw.ref);
  EXPECT_NE(raw.id, after.id);
  EXPECT_EQ(store.countsJson()["sample_mismatches"], 1);
}

TEST(ContentStoreTest, ASecondVersionCounterOnAStorageEndsItsDeduplication) {
  ContentStore store;
  at::Tensor t = at::rand({64});
  ASSERT_NE(record(store, t).id, 0u);
  at::Tensor alias = t.variable_data();  // what `t.data` returns: its own counter
  alias.mul_(3);                          // t's version does not move
  EXPECT_EQ(record(store, alias).id, 0u);
  ContentStore::Content c = record(store, t);
  EXPECT_FALSE(c.ref);
  EXPECT_EQ(c.id, 0u);
  EXPECT_EQ(store.countsJson()["aliased_storages"], 1);
}

TEST(ContentStoreTest, RawWritesAreCaughtByTheSample) {
  ContentStore store;
  at::Tensor t = at::rand({1000});
  const uint64_t before = record(store, t).id;
  // An extension writing through data_ptr: no version bump.
  std::memset(t.data_ptr(), 0, 1000 * sizeof(float));
  ContentStore::Content c = record(store, t);
  EXPECT_FALSE(c.ref);
  EXPECT_NE(c.id, before);
  EXPECT_EQ(store.countsJson()["sample_mismatches"], 1);
}

// The sample reads the first and the last element in row-major order (and
// evenly between): a raw write to either is caught whatever the tensor's
// element width and layout. The sampled positions are stepped, not divided,
// and a contiguous tensor's are read as offsets: a transposed, narrowed view
// checks the strided path, and each width its read.
TEST(ContentStoreTest, RawWritesToTheFirstOrLastElementAreCaughtInEveryWidthAndLayout) {
  uint64_t mismatches = 0;
  for (at::ScalarType dtype : {at::kByte, at::kBFloat16, at::kFloat, at::kDouble, at::kComplexDouble}) {
    for (bool transposed : {false, true}) {
      for (bool last : {false, true}) {
        SCOPED_TRACE(std::string(c10::toString(dtype)) + (transposed ? " transposed" : " contiguous") +
                     (last ? " last" : " first"));
        ContentStore store;
        at::Tensor base = at::arange(40 * 25, at::TensorOptions().dtype(at::kDouble)).reshape({40, 25}).to(dtype);
        // A transposed, narrowed view ([23, 40]): its row-major order is not
        // its memory's, and its last element is not where a contiguous one's is.
        at::Tensor t = transposed ? base.t().narrow(0, 1, 23) : base;
        ASSERT_EQ(t.is_contiguous(), !transposed);
        const uint64_t before = record(store, t).id;
        // The element at t's first or last row-major position, written in
        // place through memory (no version bump).
        const int64_t row = last ? t.size(0) - 1 : 0, column = last ? t.size(1) - 1 : 0;
        const int64_t offset = t.storage_offset() + row * t.stride(0) + column * t.stride(1);
        std::memset(static_cast<char*>(base.data_ptr()) + offset * base.element_size(), 0xA5, base.element_size());
        ContentStore::Content c = record(store, t);
        EXPECT_FALSE(c.ref);
        EXPECT_NE(c.id, before);
        EXPECT_EQ(store.countsJson()["sample_mismatches"], 1);
        mismatches += store.countsJson()["sample_mismatches"].get<uint64_t>();
        // Unchanged since: referred to again.
        EXPECT_TRUE(record(store, t).ref);
      }
    }
  }
  EXPECT_EQ(mismatches, 20u);
}

TEST(ContentStoreTest, AFreedTensorsAddressIsNotReused) {
  ContentStore store;
  {
    at::Tensor t = at::ones({4});
    record(store, t);
  }
  // The entry's weak reference keeps the freed tensor's object, so a new
  // tensor cannot take its address and hit.
  at::Tensor fresh = at::ones({4});
  EXPECT_FALSE(record(store, fresh).ref);
}

TEST(ContentStoreTest, InferenceTensorsAreNotDeduplicated) {
  ContentStore store;
  at::Tensor t;
  {
    c10::InferenceMode guard;
    t = at::ones({4});
  }
  EXPECT_EQ(record(store, t).id, 0u);
  EXPECT_EQ(record(store, t).id, 0u);
}

TEST(ContentStoreTest, InsideAKernelVersionsSayNothing) {
  ContentStore store;
  at::Tensor t = at::rand({16});
  at::AutoDispatchBelowADInplaceOrView below;  // in-place ops here do not bump
  EXPECT_EQ(record(store, t).id, 0u);
}


// Entries of dead tensors are emptied and reused for new ones (a sweep
// every 64 publications frees them): a reused entry must know nothing of
// the tensor it held, so every new tensor is a new content and is referred
// to once queued, however often entries turn over.
TEST(ContentStoreTest, EntriesOfDeadTensorsServeNewOnesAsNew) {
  ContentStore store;
  std::vector<at::Tensor> alive;
  uint64_t last = 0;
  for (int i = 0; i < 2000; ++i) {
    at::Tensor t = i % 3 == 0 ? at::rand({8}) : at::rand({2, 4}).add_(1);  // versions 0 and 1
    ContentStore::Content first = record(store, t);
    ASSERT_NE(first.id, 0u) << i;
    ASSERT_FALSE(first.ref) << i;
    ASSERT_GT(first.id, last) << i;
    last = first.id;
    ContentStore::Content again = record(store, t);
    ASSERT_TRUE(again.ref) << i;
    ASSERT_EQ(again.id, first.id) << i;
    if (i % 10 == 0) alive.push_back(t);  // some live on, most die here
  }
  // Those still alive are still known.
  for (const at::Tensor& t : alive) EXPECT_TRUE(record(store, t).ref);
}

// The store's entries live as long as their tensors, across steps: taken
// from the program's heap, they sat between its tensors and kept it from
// reusing their holes (resnet18 + AdamW on torch 2.14 peaked 56 MB above its
// own run, 8 MB once they moved out). Their nodes and buffers come from
// pages of their own (side_heap.h): remembering thousands of live tensors
// takes no memory from malloc.
TEST(ContentStoreTest, EntriesLiveOutsideTheProgramsHeap) {
  ContentStore store;
  std::vector<at::Tensor> alive;
  for (int i = 0; i < 4000; ++i) alive.push_back(at::rand({4}));
  std::vector<ContentStore::Pending> pending;
  pending.reserve(1);
  const size_t before = mallinfo2().uordblks;
  for (const at::Tensor& t : alive) {
    ASSERT_NE(store.identify(t, pending).id, 0u);
    store.publish(pending);
  }
  const size_t after = mallinfo2().uordblks;
  // 4,000 entries took about 1 MB from malloc before; a few KiB of slack
  // for what torch itself may allocate on the way.
  EXPECT_LT(after, before + 64 * 1024) << (after - before) << " bytes from malloc";
  for (const at::Tensor& t : alive) EXPECT_TRUE(record(store, t).ref);
}

}  // namespace
}  // namespace acc::recorder
