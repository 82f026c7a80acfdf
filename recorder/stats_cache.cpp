#include "recorder/stats_cache.h"

namespace acc::recorder {
namespace {

// An op has a handful of outputs; more entries would only be stale.
constexpr size_t kMaxEntries = 16;

}  // namespace

bool StatsCache::cacheable(const at::Tensor& t) {
  // Inference tensors have no version counter to guard the entry.
  return t.defined() && !t.is_inference() && t.layout() == at::kStrided;
}

std::optional<format::Stats> StatsCache::find(const at::Tensor& t) const {
  if (!cacheable(t)) return std::nullopt;
  for (const Entry& e : entries_) {
    // Only the op right after the one that stored the entry may use it.
    if (e.ops + 1 != ops_ || e.impl._unsafe_get_target() != t.unsafeGetTensorImpl()) continue;
    if (e.impl.expired() || e.version != t._version() || e.data != t.data_ptr()) continue;
    return e.stats;
  }
  return std::nullopt;
}

void StatsCache::store(const at::Tensor& t, const format::Stats& stats) {
  if (!cacheable(t)) return;
  // Entries older than the current op can never match again.
  if (!entries_.empty() && entries_.front().ops != ops_) entries_.clear();
  if (entries_.size() == kMaxEntries) return;
  entries_.push_back({c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(
                          t.getIntrusivePtr()),
                      t._version(), t.data_ptr(), ops_, stats});
}

StatsCache& threadStatsCache() {
  thread_local StatsCache cache;
  return cache;
}

}  // namespace acc::recorder
