#include "recorder/observe/selector.h"

#include <cstdint>
#include <algorithm>
#include <cctype>

namespace acc::recorder {
namespace {

bool containsLower(std::string_view haystack, std::string_view needle) {
  auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                        [](char a, char b) {
                          return std::tolower(static_cast<unsigned char>(a)) == b;
                        });
  return it != haystack.end();
}

}  // namespace

bool Selector::matchesList(std::string_view op, std::string_view alias) const {
  if (config_.op_list.empty()) return true;
  return std::any_of(config_.op_list.begin(), config_.op_list.end(), [&](const std::string& s) {
    return containsLower(op, s) || (!alias.empty() && containsLower(alias, s));
  });
}

// A prefix of whole components: enc.layers.0 holds enc.layers.0.norm1, not
// enc.layers.01.
bool Selector::matchesModules(std::string_view module) const {
  if (config_.modules.empty()) return true;
  return std::any_of(config_.modules.begin(), config_.modules.end(), [&](const std::string& prefix) {
    return module.substr(0, prefix.size()) == prefix &&
           (module.size() == prefix.size() || module[prefix.size()] == '.');
  });
}

bool Selector::select(std::string_view name, std::string_view op, std::string_view alias, bool backward,
                      int64_t step, std::string_view module) {
  // A step that is not recorded needs no range bookkeeping: the range
  // starts afresh with every step.
  if (!config_.steps.contains(step)) return false;
  const bool candidate =
      config_.records(backward ? env::Passes::Backward : env::Passes::Forward) && matchesList(op, alias) &&
      matchesModules(module);
  if (!stateful_) return candidate;

  std::lock_guard<std::mutex> lock(mutex_);
  if (step != step_) {
    step_ = step;
    resetRange();
  }
  // Half-open: the start name opens the range, the end name closes it.
  if (!config_.range_start.empty() && name == config_.range_start) in_range_ = true;
  if (!config_.range_end.empty() && name == config_.range_end) in_range_ = false;

  if (!candidate || !in_range_) return false;
  // ACC_SKIP=N: record one candidate, then skip the next N.
  if (since_last_ < config_.skip) {
    ++since_last_;
    return false;
  }
  since_last_ = 0;
  return true;
}

}  // namespace acc::recorder
