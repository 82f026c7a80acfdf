// The values of the contents a reader restored last from deltas (format
// v8), by content id, up to a budget of bytes: an in-place chain's next op
// reads the version the previous one wrote, which is then one lookup
// instead of a walk down the chain of deltas in the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>

namespace acc::analyzer {

class RecentValues {
 public:
  static constexpr size_t kBudget = size_t(64) << 20;

  explicit RecentValues(size_t budget = kBudget) : budget_(budget) {}

  // The values of content `id`, or null; valid until the next put().
  const std::string* find(uint64_t id);
  // Keeps a copy of `values` as content `id`'s, forgetting the least
  // recently used beyond the budget (values larger than it are not kept).
  void put(uint64_t id, const std::string& values);


 private:
  struct Entry {
    uint64_t id;
    std::string values;
  };
  size_t budget_;
  size_t bytes_ = 0;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<uint64_t, std::list<Entry>::iterator> by_id_;
};

}  // namespace acc::analyzer
