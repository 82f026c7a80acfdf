// The analyzer's side of the replay stage: acc-replay worker processes (one
// per core by default) that run recorded ops again on the CPU. Torch-free:
// acc-analyzer itself never loads libtorch; a worker that crashes on an op
// costs that op only.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "replay/protocol.h"

namespace acc::replay {

// acc-replay next to the running executable (bin/), or "" when absent.
std::string defaultWorkerPath();

class Pool {
 public:
  // `binary`: the acc-replay executable; "" or missing: every request comes
  // back NotReplayable, saying why.
  Pool(std::string binary, unsigned workers);

  // Runs every request `next` hands out (nullopt: no more) on the workers and
  // calls `done` with its id and outcome, in completion order, one call at a
  // time. One request per worker is in flight at once (its data in memory).
  // Returns when all are done.
  using Next = std::function<std::optional<std::pair<uint64_t, Request>>()>;
  using Done = std::function<void(uint64_t, Outcome&&)>;
  void run(const Next& next, const Done& done);

  unsigned workers() const { return workers_; }
  const std::string& unavailable() const { return unavailable_; }  // why no worker can run, or ""

  // What the workers wrote on stderr (torch's warnings, a crash's last
  // words): collected in a file of the pool's, never printed, so that the
  // analyzer's own output stays its verdict. Lines counted, the first kept.
  struct Stderr {
    uint64_t lines = 0;
    std::vector<std::string> first;  // at most kStderrKept, each cut at kStderrLineChars
  };
  static constexpr size_t kStderrKept = 20;
  static constexpr size_t kStderrLineChars = 500;
  Stderr workerStderr() const;

  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

 private:
  std::string binary_;
  unsigned workers_;
  std::string unavailable_;
  int stderr_fd_ = -1;  // shared by the workers, appended to
};

}  // namespace acc::replay
