// Which nn.Module each op runs in: the attribute path named_modules() gives
// from the outermost module called ("enc.layers.0.norm1"; "" outside every
// module, and in the outermost module's own forward). Torch's module hooks
// (recorder/python/python_hooks.h) tell it each thread's innermost module as each
// forward begins and ends; C++ programs run none, and their records carry no
// path.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

namespace acc::recorder {

class ModulePaths {
 public:
  // The process's one table: the hooks outlive recording sessions.
  static ModulePaths& instance();

  // The innermost module whose forward runs on this thread; a reference
  // that stays valid for the life of the process.
  static const std::string& current();

  uint64_t intern(const char* path);  // an id for the path, 0 for ""
  void enter(uint64_t id);            // the thread's innermost module is now this one

 private:
  ModulePaths();

  std::mutex mutex_;
  std::deque<std::string> paths_;  // by id; a deque never moves its elements
};

}  // namespace acc::recorder
