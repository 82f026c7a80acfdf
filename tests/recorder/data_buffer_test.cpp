// recorder::DataBuffer: level 2's tensor bytes in blocks of acc's own, which
// come back for the next buffers of their size, are counted while in use,
// and are kept for reuse only up to the cache's bound.
#include "recorder/write/data_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace acc::recorder {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(DataBufferTest, CopiesAndMovesItsBytes) {
  std::string bytes(3 * kMiB + 17, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  for (size_t size : {size_t{0}, size_t{1}, size_t{100}, bytes.size()}) {
    DataBuffer a(bytes.data(), size);
    ASSERT_EQ(a.size(), size);
    EXPECT_EQ(a.view(), std::string_view(bytes).substr(0, size));
    DataBuffer b(std::move(a));
    EXPECT_EQ(a.size(), 0u);
    EXPECT_EQ(b.view(), std::string_view(bytes).substr(0, size));
    DataBuffer c;
    c = std::move(b);
    EXPECT_EQ(c.view(), std::string_view(bytes).substr(0, size));
  }
}

// Small buffers come from malloc; large ones take a block, counted while in
// use, and a block let go serves the next buffer of its size.
TEST(DataBufferTest, LargeBlocksAreCountedAndReused) {
  setDataBufferCache(64 * kMiB);
  const uint64_t before = dataBufferBytes().in_use;
  {
    DataBuffer small(1000);
    EXPECT_EQ(dataBufferBytes().in_use, before);
  }
  const char* first = nullptr;
  {
    DataBuffer large(5 * kMiB + 3);
    first = large.data();
    const uint64_t used = dataBufferBytes().in_use - before;
    EXPECT_GE(used, 5 * kMiB + 3);
    EXPECT_LE(used, 5 * kMiB * 5 / 4 + 4096);  // a block wastes at most a fifth
    EXPECT_EQ(dataBuffersInUse(), dataBufferBytes().in_use);
  }
  EXPECT_EQ(dataBufferBytes().in_use, before);
  DataBuffer again(5 * kMiB + 100);  // the same size class
  EXPECT_EQ(again.data(), first);
  EXPECT_GE(dataBufferBytes().peak, 5 * kMiB);
}

// Blocks in use and kept take at most the cache's bound together: the rest
// go back to the system when let go.
TEST(DataBufferTest, KeptBlocksStayWithinTheBound) {
  setDataBufferCache(4 * kMiB);
  {
    std::vector<DataBuffer> buffers;
    for (int i = 0; i < 8; ++i) buffers.emplace_back(kMiB);
    EXPECT_GE(dataBufferBytes().in_use, 8 * kMiB);
  }
  DataBufferBytes b = dataBufferBytes();
  EXPECT_EQ(b.in_use, 0u);
  EXPECT_LE(b.cached, 4 * kMiB);
  EXPECT_GT(b.cached, 0u);
  // A size not kept: kept blocks of other sizes make room for it.
  {
    DataBuffer other(3 * kMiB + 12345);
    b = dataBufferBytes();
    EXPECT_LE(b.in_use + b.cached, 4 * kMiB);
  }
  setDataBufferCache(0);
  {
    DataBuffer one(kMiB);
  }
  EXPECT_EQ(dataBufferBytes().in_use, 0u);
  setDataBufferCache(uint64_t{256} << 20);
}

}  // namespace
}  // namespace acc::recorder
