// Decides which observed ops become records: steps, passes, ACC_OP_LIST,
// ACC_MODULES, ACC_OP_RANGE and ACC_SKIP, applied in that order. Pure logic, no torch.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "env/config.h"

namespace acc::recorder {

class Selector {
 public:
  explicit Selector(const env::Config& config)
      : config_(config),
        stateful_(matchesNames() || config.skip > 0),
        since_last_(config.skip) {
    resetRange();
  }

  // Every named op must be offered in execution order, recorded or not, so
  // the range sees its boundaries. `op` and `alias` (the autograd node of a
  // backward record) are both matched against ACC_OP_LIST, `module` (the
  // op's module path, its forward op's for backward) against ACC_MODULES.
  // `name` is read only when matchesNames().
  bool select(std::string_view name, std::string_view op, std::string_view alias, bool backward,
              int64_t step, std::string_view module = {});

  // Whether select() reads op names (ACC_OP_RANGE): callers may pass an
  // empty name otherwise, and build it only for the ops that are recorded.
  bool matchesNames() const { return !config_.range_start.empty() || !config_.range_end.empty(); }

  bool stepSelected(int64_t step) const { return config_.steps.contains(step); }

 private:
  void resetRange() { in_range_ = config_.range_start.empty(); }
  bool matchesList(std::string_view op, std::string_view alias) const;
  bool matchesModules(std::string_view module) const;

  const env::Config config_;
  // ACC_OP_RANGE and ACC_SKIP keep state across ops (under mutex_); without
  // them every op is judged on its own, without the lock.
  const bool stateful_;
  std::mutex mutex_;
  int64_t step_ = 0;
  bool in_range_ = true;
  uint64_t since_last_;  // candidates skipped since the last record
};

}  // namespace acc::recorder
