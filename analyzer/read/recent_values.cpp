#include "analyzer/read/recent_values.h"

namespace acc::analyzer {

const std::string* RecentValues::find(uint64_t id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  return &it->second->values;
}

void RecentValues::put(uint64_t id, const std::string& values) {
  if (values.size() > budget_) return;
  if (auto it = by_id_.find(id); it != by_id_.end()) {
    bytes_ -= it->second->values.size();
    order_.erase(it->second);
    by_id_.erase(it);
  }
  while (!order_.empty() && bytes_ + values.size() > budget_) {
    bytes_ -= order_.back().values.size();
    by_id_.erase(order_.back().id);
    order_.pop_back();
  }
  order_.push_front({id, values});
  by_id_[id] = order_.begin();
  bytes_ += values.size();
}

}  // namespace acc::analyzer
