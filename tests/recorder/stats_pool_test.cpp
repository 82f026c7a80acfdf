// The statistics pool must run every item exactly once, whoever calls it.
#include <gtest/gtest.h>

#include <cstdint>
#include <atomic>
#include <thread>
#include <vector>

#include "recorder/capture/cpu/stats_pool.h"

namespace acc::recorder {
namespace {

void expectEachItemOnce(StatsPool& pool, int64_t count) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
  pool.run(count, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
  for (int64_t i = 0; i < count; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
}

TEST(StatsPoolTest, RunsEveryItemOnceWithAndWithoutHelpers) {
  for (unsigned helpers : {0u, 1u, 3u}) {
    StatsPool pool(helpers);
    for (int64_t count : {0, 1, 2, 7, 1000}) expectEachItemOnce(pool, count);
  }
}

TEST(StatsPoolTest, CallersOnSeveralThreadsTakeTurns) {
  StatsPool pool(2);
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int round = 0; round < 50; ++round) expectEachItemOnce(pool, 37);
    });
  }
  for (auto& c : callers) c.join();
}

TEST(StatsPoolTest, HelpersDoShareTheWork) {
  StatsPool pool(1);
  std::atomic<int> on_caller{0};
  const auto caller = std::this_thread::get_id();
  // Items slow enough that the helper wakes up before the caller is done.
  pool.run(200, [&](int64_t) {
    if (std::this_thread::get_id() == caller) on_caller.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  });
  EXPECT_LT(on_caller.load(), 200);
  EXPECT_GT(on_caller.load(), 0);
}

}  // namespace
}  // namespace acc::recorder
