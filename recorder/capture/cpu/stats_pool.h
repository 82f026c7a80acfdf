// Helper threads that summarize the chunks of one large tensor alongside the
// op's own thread. Training often leaves cores idle (torch here runs one
// intra-op thread), and statistics are acc's main cost.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace acc::recorder {

class StatsPool {
 public:
  // `helpers` threads besides the caller; 0 runs everything on the caller.
  explicit StatsPool(unsigned helpers);
  ~StatsPool();
  StatsPool(const StatsPool&) = delete;
  StatsPool& operator=(const StatsPool&) = delete;

  // Calls work(i) for every i in [0, count), on the caller and the helpers,
  // and returns when all calls are done. One job at a time; callers from
  // several threads take turns.
  void run(int64_t count, const std::function<void(int64_t)>& work);

  // The process-wide pool: one helper per core beyond the first, at most 3.
  static StatsPool& shared();

 private:
  void helperLoop();
  void drain();

  std::mutex job_mutex_;  // one job at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* work_ = nullptr;
  int64_t next_ = 0, count_ = 0, finished_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> helpers_;
  int owner_pid_;  // a forked child has no helper threads: it runs serially
};

}  // namespace acc::recorder
