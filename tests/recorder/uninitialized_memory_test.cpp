// The map of uninitialized storages (recorder/capture/uninitialized_memory.h)
// on its own: what it holds, and that storages freed unwritten leave it, so
// that the ops after them skip their lookups (UninitializedMemory's e2e
// tests check the records).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "recorder/capture/uninitialized_memory.h"

namespace acc::recorder {
namespace {

constexpr int kSweepEvery = static_cast<int>(UninitializedMemory::kSweepEvery);

TEST(UninitializedMemoryMap, AStorageFreedUnwrittenLeavesTheMapWithinASweep) {
  UninitializedMemory memory;
  {
    at::Tensor handle = at::empty({288}, at::kByte);  // a buffer dropped unwritten
    memory.add(handle);
    EXPECT_FALSE(memory.empty());
    EXPECT_TRUE(memory.contains(handle));
  }
  for (int i = 0; i < kSweepEvery - 1; ++i) memory.sweepSometimes();
  EXPECT_FALSE(memory.empty()) << "swept before its turn";
  memory.sweepSometimes();
  EXPECT_TRUE(memory.empty());
}

TEST(UninitializedMemoryMap, ALiveStorageStaysUntilWritten) {
  UninitializedMemory memory;
  at::Tensor buffer = at::empty({4, 4});
  at::Tensor view = buffer.narrow(0, 1, 2);
  memory.add(buffer);
  for (int i = 0; i < 3 * kSweepEvery; ++i) memory.sweepSometimes();
  EXPECT_FALSE(memory.empty());
  EXPECT_TRUE(memory.contains(view)) << "a view shares its base's storage";
  EXPECT_FALSE(memory.contains(at::empty({4, 4})));
  memory.written(view);
  EXPECT_TRUE(memory.empty());
  EXPECT_FALSE(memory.contains(buffer));
}

}  // namespace
}  // namespace acc::recorder
