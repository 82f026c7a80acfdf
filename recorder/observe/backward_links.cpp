#include <cstdint>
#include "recorder/observe/backward_links.h"

namespace acc::recorder {
namespace {

// Graphs that never run backward (inference with grad on, no optimizer)
// would grow the map forever; past this many links the oldest are dropped.
constexpr size_t kMaxLinks = 1 << 20;

}  // namespace

BackwardLinks::Claimed BackwardLinks::claim(uint64_t thread, uint64_t begin, uint64_t end,
                                            const std::shared_ptr<ForwardOp>& op) {
  Claimed claimed;
  std::lock_guard<std::mutex> lock(mutex_);
  for (uint64_t seq = begin; seq < end; ++seq) {
    if (links_.emplace(std::make_pair(thread, seq), Found{op, false}).second) claimed.push_back(seq);
  }
  while (links_.size() > kMaxLinks) {
    links_.erase(links_.begin());
    ++evicted_;
  }
  return claimed;
}

void BackwardLinks::markHooked(uint64_t thread, uint64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = links_.find({thread, seq});
  if (it != links_.end()) it->second.hooked = true;
}

BackwardLinks::Found BackwardLinks::take(uint64_t thread, uint64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = links_.find({thread, seq});
  if (it == links_.end()) return {};
  Found found = std::move(it->second);
  links_.erase(it);
  return found;
}

void BackwardLinks::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  links_.clear();
}

uint64_t BackwardLinks::evicted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return evicted_;
}

}  // namespace acc::recorder
