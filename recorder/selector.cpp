#include "recorder/selector.h"

#include <cstdint>
#include <algorithm>
#include <cctype>

namespace acc::recorder {
namespace {

bool containsLower(const std::string& haystack, const std::string& needle) {
  auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                        [](char a, char b) {
                          return std::tolower(static_cast<unsigned char>(a)) == b;
                        });
  return it != haystack.end();
}

}  // namespace

bool Selector::matchesList(const std::string& op, const std::string& alias) const {
  if (config_.op_list.empty()) return true;
  return std::any_of(config_.op_list.begin(), config_.op_list.end(), [&](const std::string& s) {
    return containsLower(op, s) || (!alias.empty() && containsLower(alias, s));
  });
}

bool Selector::select(const std::string& name, const std::string& op, const std::string& alias,
                      bool backward, int64_t step) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (step != step_) {
    step_ = step;
    resetRange();
  }
  // Half-open: the start name opens the range, the end name closes it.
  if (!config_.range_start.empty() && name == config_.range_start) in_range_ = true;
  if (!config_.range_end.empty() && name == config_.range_end) in_range_ = false;

  if (!config_.steps.contains(step)) return false;
  if (!config_.records(backward ? env::Passes::Backward : env::Passes::Forward)) return false;
  if (!matchesList(op, alias)) return false;
  if (!in_range_) return false;
  // ACC_SKIP=N: record one candidate, then skip the next N.
  if (since_last_ < config_.skip) {
    ++since_last_;
    return false;
  }
  since_last_ = 0;
  return true;
}

}  // namespace acc::recorder
