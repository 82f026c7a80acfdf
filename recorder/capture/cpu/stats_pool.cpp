#include "recorder/capture/cpu/stats_pool.h"

#include "recorder/session/termination.h"

#include <cstdint>
#include <unistd.h>

#include <algorithm>

namespace acc::recorder {

StatsPool::StatsPool(unsigned helpers) : owner_pid_(::getpid()) {
  for (unsigned i = 0; i < helpers; ++i) helpers_.emplace_back([this] {
    blockTerminationSignals();
    helperLoop();
  });
}

StatsPool::~StatsPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

StatsPool& StatsPool::shared() {
  // Never destroyed: ops may still run while the process exits.
  static StatsPool* pool = new StatsPool(std::min(3u, std::max(1u, std::thread::hardware_concurrency()) - 1));
  return *pool;
}

// Takes items of the current job until none is left.
void StatsPool::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (work_ != nullptr && next_ < count_) {
    int64_t i = next_++;
    const auto* work = work_;
    lock.unlock();
    (*work)(i);
    lock.lock();
    if (++finished_ == count_) done_.notify_all();
  }
}

void StatsPool::helperLoop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    drain();
  }
}

void StatsPool::run(int64_t count, const std::function<void(int64_t)>& work) {
  if (helpers_.empty() || count < 2 || ::getpid() != owner_pid_) {
    for (int64_t i = 0; i < count; ++i) work(i);
    return;
  }
  std::lock_guard<std::mutex> job(job_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    work_ = &work;
    next_ = 0;
    count_ = count;
    finished_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  drain();
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return finished_ == count_; });
  work_ = nullptr;
}

}  // namespace acc::recorder
