// The statistics cache may only answer for the op right after the one that
// stored an entry, and only for the same, unmodified tensor.
#include <gtest/gtest.h>

#include "recorder/stats_cache.h"

namespace acc::recorder {
namespace {

format::Stats marked(double mean) {
  format::Stats s;
  s.mean = mean;
  return s;
}

TEST(StatsCacheTest, AnswersTheNextOpForTheSameTensor) {
  StatsCache cache;
  at::Tensor t = at::ones({4});
  cache.opStarted();
  cache.store(t, marked(7));
  cache.opStarted();
  auto hit = cache.find(t);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->mean, 7);
}

TEST(StatsCacheTest, AnOpInBetweenInvalidatesTheEntry) {
  StatsCache cache;
  at::Tensor t = at::ones({4});
  cache.opStarted();
  cache.store(t, marked(7));
  cache.opStarted();
  cache.opStarted();
  EXPECT_FALSE(cache.find(t).has_value());
}

TEST(StatsCacheTest, InPlaceWritesInvalidateTheEntry) {
  StatsCache cache;
  at::Tensor t = at::ones({4});
  cache.opStarted();
  cache.store(t, marked(7));
  t.add_(1);  // bumps the version counter
  cache.opStarted();
  EXPECT_FALSE(cache.find(t).has_value());
}

TEST(StatsCacheTest, OtherTensorsMiss) {
  StatsCache cache;
  at::Tensor t = at::ones({4});
  at::Tensor view = t.view({2, 2});  // same memory, another tensor
  cache.opStarted();
  cache.store(t, marked(7));
  cache.opStarted();
  EXPECT_FALSE(cache.find(view).has_value());
  EXPECT_FALSE(cache.find(at::ones({4})).has_value());
}

TEST(StatsCacheTest, AFreedTensorsAddressIsNotReused) {
  StatsCache cache;
  cache.opStarted();
  {
    at::Tensor t = at::ones({4});
    cache.store(t, marked(7));
  }
  // The entry's weak reference keeps the freed tensor's object, so a new
  // tensor cannot take its address and hit.
  at::Tensor fresh = at::ones({4});
  cache.opStarted();
  EXPECT_FALSE(cache.find(fresh).has_value());
}

TEST(StatsCacheTest, InferenceTensorsAreNotCached) {
  StatsCache cache;
  at::Tensor t;
  {
    c10::InferenceMode guard;
    t = at::ones({4});
  }
  cache.opStarted();
  cache.store(t, marked(7));
  cache.opStarted();
  EXPECT_FALSE(cache.find(t).has_value());
}

}  // namespace
}  // namespace acc::recorder
