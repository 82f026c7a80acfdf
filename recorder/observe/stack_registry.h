// Captures the call stack of a record (Python, native or both) and stores
// each distinct stack once: the first sighting emits a StackRecord, later
// ones only reuse its id.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "env/config.h"
#include "recorder/python/python_stack.h"

namespace acc::recorder {

class StackRegistry {
 public:
  using Emit = std::function<void(std::string)>;
  StackRegistry(env::StackMode mode, Emit emit);

  // Stack id of the calling thread's current stack; 0 when nothing was
  // captured (mode none, or an engine thread without Python frames).
  uint64_t capture();
  uint64_t distinctStacks() const;

 private:
  env::StackMode mode_;
  Emit emit_;
  PythonStack python_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, uint64_t> ids_;
};

}  // namespace acc::recorder
