#include "recorder/python/module_paths.h"

#include <string>

namespace acc::recorder {
namespace {

// What this thread's module hooks said last: the innermost module's path.
thread_local const std::string* t_current = nullptr;

const std::string& emptyPath() {
  static const std::string empty;
  return empty;
}

}  // namespace

ModulePaths& ModulePaths::instance() {
  static ModulePaths* paths = new ModulePaths;  // never destroyed: hooks may run during exit
  return *paths;
}

ModulePaths::ModulePaths() { paths_.emplace_back(); }

const std::string& ModulePaths::current() {
  const std::string* p = t_current;
  return p != nullptr ? *p : emptyPath();
}

uint64_t ModulePaths::intern(const char* path) {
  if (*path == '\0') return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  // Interned once per module of each outermost module: a linear search over
  // the paths is not worth an index.
  for (size_t i = 1; i < paths_.size(); ++i) {
    if (paths_[i] == path) return i;
  }
  paths_.emplace_back(path);
  return paths_.size() - 1;
}

void ModulePaths::enter(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  t_current = id < paths_.size() ? &paths_[id] : nullptr;
}

}  // namespace acc::recorder
