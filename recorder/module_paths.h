// Which nn.Module each op runs in, for Python programs, with no change to
// them: once torch's import is complete, torch's global module hooks are
// registered, and each module's forward tells this thread's innermost module
// as it begins and ends. Paths are the attribute paths named_modules() gives
// from the outermost module called ("enc.layers.0.norm1"; "" outside every
// module, and in the outermost module's own forward). C++ programs have no
// module hooks: their records carry no path.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

namespace acc::recorder {

class ModulePaths {
 public:
  // The process's one tracker: torch's hooks outlive recording sessions.
  static ModulePaths& instance();

  // Registers the hooks if the calling thread runs Python and torch's import
  // has completed; does nothing once they are registered or cannot be.
  // Cheap after that (one relaxed load): call it on every op.
  void tryInstall(bool quiet) {
    if (state_.load(std::memory_order_relaxed) < kInstalling) install(quiet);
  }

  // Whether the hooks are registered: records then carry a path.
  bool installed() const { return state_.load(std::memory_order_relaxed) == kInstalled; }

  // The innermost module whose forward runs on this thread; a reference
  // that stays valid for the life of the process.
  static const std::string& current();

  // Called from the hooks (Python, the GIL held).
  uint64_t intern(const char* path);  // an id for the path, 0 for ""
  void enter(uint64_t id);            // the thread's innermost module is now this one

 private:
  ModulePaths();
  void install(bool quiet);

  enum State : int { kWaiting = 0, kInstalling = 1, kInstalled = 2, kUnavailable = 3 };
  std::atomic<int> state_{kWaiting};
  std::mutex mutex_;
  std::deque<std::string> paths_;  // by id; a deque never moves its elements
};

}  // namespace acc::recorder
