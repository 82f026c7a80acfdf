// recorder::RingBuffer: FIFO order, slot and byte limits, and many producers
// with one consumer.
#include "recorder/write/ring_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace acc::recorder {
namespace {

std::unique_ptr<std::string> item(std::string s) {
  return std::make_unique<std::string>(std::move(s));
}

TEST(RingBufferTest, EmptyQueuePopsNothing) {
  RingBuffer q(8, 1 << 20);
  EXPECT_EQ(q.tryPop(), nullptr);
  EXPECT_EQ(q.bytesQueued(), 0u);
  EXPECT_EQ(q.byteBudget(), uint64_t{1} << 20);
}

TEST(RingBufferTest, SingleThreadFifoOrder) {
  RingBuffer q(16, 1 << 20);
  for (int round = 0; round < 5; ++round) {  // wraps around the slots
    for (int i = 0; i < 10; ++i) {
      auto p = item("r" + std::to_string(round) + "i" + std::to_string(i));
      ASSERT_TRUE(q.tryPush(p));
      EXPECT_EQ(p, nullptr);  // ownership taken
    }
    for (int i = 0; i < 10; ++i) {
      auto p = q.tryPop();
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(*p, "r" + std::to_string(round) + "i" + std::to_string(i));
    }
    EXPECT_EQ(q.tryPop(), nullptr);
    EXPECT_EQ(q.bytesQueued(), 0u);
  }
}

TEST(RingBufferTest, FullQueueRefusesAndLeavesItemUntouched) {
  RingBuffer q(4, 1 << 20);
  for (int i = 0; i < 4; ++i) {
    auto p = item(std::to_string(i));
    ASSERT_TRUE(q.tryPush(p)) << i;
  }
  auto extra = item("extra");
  const std::string* before = extra.get();
  EXPECT_FALSE(q.tryPush(extra));
  ASSERT_NE(extra, nullptr);
  EXPECT_EQ(extra.get(), before);
  EXPECT_EQ(*extra, "extra");

  // One pop frees one slot; order is unchanged.
  EXPECT_EQ(*q.tryPop(), "0");
  EXPECT_TRUE(q.tryPush(extra));
  for (const char* want : {"1", "2", "3", "extra"}) {
    auto p = q.tryPop();
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(*p, want);
  }
  EXPECT_EQ(q.tryPop(), nullptr);
}

TEST(RingBufferTest, SlotCountIsRoundedUpToAPowerOfTwo) {
  RingBuffer q(5, 1 << 20);  // 8 slots
  int pushed = 0;
  for (int i = 0; i < 100; ++i) {
    auto p = item("x");
    if (!q.tryPush(p)) break;
    ++pushed;
  }
  EXPECT_EQ(pushed, 8);
}

TEST(RingBufferTest, ByteBudgetIsRespected) {
  RingBuffer q(64, 100);
  auto a = item(std::string(60, 'a'));
  ASSERT_TRUE(q.tryPush(a));
  EXPECT_EQ(q.bytesQueued(), 60u);

  auto b = item(std::string(41, 'b'));  // 60 + 41 > 100
  EXPECT_FALSE(q.tryPush(b));
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->size(), 41u);
  EXPECT_EQ(q.bytesQueued(), 60u);

  auto c = item(std::string(40, 'c'));  // exactly fills the budget
  EXPECT_TRUE(q.tryPush(c));
  EXPECT_EQ(q.bytesQueued(), 100u);

  auto d = item(std::string(1, 'd'));
  EXPECT_FALSE(q.tryPush(d));

  EXPECT_EQ(q.tryPop()->size(), 60u);
  EXPECT_EQ(q.bytesQueued(), 40u);
  EXPECT_TRUE(q.tryPush(b));  // 40 + 41 fits now
  EXPECT_EQ(q.bytesQueued(), 81u);
}

TEST(RingBufferTest, OversizedItemIsAcceptedOnlyWhenQueueIsEmpty) {
  RingBuffer q(8, 10);
  auto big = item(std::string(1000, 'x'));
  ASSERT_TRUE(q.tryPush(big));  // an empty queue takes anything
  EXPECT_EQ(q.bytesQueued(), 1000u);

  auto small = item("y");
  EXPECT_FALSE(q.tryPush(small));
  auto big2 = item(std::string(1000, 'z'));
  EXPECT_FALSE(q.tryPush(big2));

  EXPECT_EQ(q.tryPop()->size(), 1000u);
  EXPECT_EQ(q.bytesQueued(), 0u);
  EXPECT_TRUE(q.tryPush(big2));
}

TEST(RingBufferTest, DestructorFreesQueuedItems) {
  // Run under ASan/valgrind to see leaks; here it must simply not crash.
  auto q = std::make_unique<RingBuffer<>>(8, 1 << 20);
  for (int i = 0; i < 5; ++i) {
    auto p = item(std::string(100, 'q'));
    ASSERT_TRUE(q->tryPush(p));
  }
  q.reset();
}

TEST(RingBufferTest, ManyProducersOneConsumer) {
  constexpr int kProducers = 4;
  constexpr int kItems = 20000;
  RingBuffer q(256, 1 << 20);  // small, so producers often find it full

  // A lost item would otherwise hang the test: give up after a deadline.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto late = [&] { return std::chrono::steady_clock::now() > deadline; };

  std::atomic<bool> go{false};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < kItems; ++i) {
        auto it = item(std::to_string(p) + ":" + std::to_string(i));
        while (!q.tryPush(it)) {
          if (late()) return;
          std::this_thread::yield();
        }
      }
    });
  }

  std::vector<int> next(kProducers, 0);  // next expected index per producer
  int received = 0;
  int out_of_order = 0;
  std::thread consumer([&] {
    while (received < kProducers * kItems) {
      auto it = q.tryPop();
      if (!it) {
        if (late()) return;
        std::this_thread::yield();
        continue;
      }
      size_t colon = it->find(':');
      int p = std::stoi(it->substr(0, colon));
      int i = std::stoi(it->substr(colon + 1));
      if (p < 0 || p >= kProducers || i != next[p]) ++out_of_order;
      else ++next[p];
      ++received;
    }
  });

  go.store(true);
  for (auto& t : producers) t.join();
  consumer.join();

  EXPECT_EQ(received, kProducers * kItems);
  EXPECT_EQ(out_of_order, 0);
  for (int p = 0; p < kProducers; ++p) EXPECT_EQ(next[p], kItems) << "producer " << p;
  EXPECT_EQ(q.tryPop(), nullptr);
  EXPECT_EQ(q.bytesQueued(), 0u);
}

// The writer's pool of recycled items: one thread pushes, several pop.
// Every item comes out exactly once, whoever takes it.
TEST(RingBufferTest, OneProducerManyConsumers) {
  constexpr int kConsumers = 3;
  constexpr int kItems = 30000;
  RingBuffer q(64, 1 << 20);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto late = [&] { return std::chrono::steady_clock::now() > deadline; };

  std::atomic<int> taken{0};
  std::vector<std::vector<int>> seen(kConsumers);
  std::vector<std::thread> consumers;
  for (int c = 0; c < kConsumers; ++c) {
    consumers.emplace_back([&, c] {
      while (taken.load() < kItems && !late()) {
        if (auto it = q.tryPop()) {
          seen[c].push_back(std::stoi(*it));
          taken.fetch_add(1);
        } else {
          std::this_thread::yield();
        }
      }
    });
  }
  for (int i = 0; i < kItems && !late(); ++i) {
    auto it = item(std::to_string(i));
    while (!q.tryPush(it) && !late()) std::this_thread::yield();
  }
  for (auto& t : consumers) t.join();

  std::vector<int> count(kItems, 0);
  for (const auto& v : seen) {
    for (size_t k = 1; k < v.size(); ++k) EXPECT_LT(v[k - 1], v[k]);  // each consumer sees FIFO order
    for (int i : v) ++count[i];
  }
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(count[i], 1) << "item " << i;
  EXPECT_EQ(q.tryPop(), nullptr);
  EXPECT_EQ(q.bytesQueued(), 0u);
}

}  // namespace
}  // namespace acc::recorder
