// Decides which observed ops become records: steps, passes, ACC_OP_LIST,
// ACC_OP_RANGE and ACC_SKIP, applied in that order. Pure logic, no torch.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "env/config.h"

namespace acc::recorder {

class Selector {
 public:
  explicit Selector(const env::Config& config) : config_(config), since_last_(config.skip) {
    resetRange();
  }

  // Every named op must be offered in execution order, recorded or not, so
  // the range sees its boundaries. `op` and `alias` (the autograd node of a
  // backward record) are both matched against ACC_OP_LIST.
  bool select(const std::string& name, const std::string& op, const std::string& alias,
              bool backward, int64_t step);

  bool stepSelected(int64_t step) const { return config_.steps.contains(step); }

 private:
  void resetRange() { in_range_ = config_.range_start.empty(); }
  bool matchesList(const std::string& op, const std::string& alias) const;

  env::Config config_;
  std::mutex mutex_;
  int64_t step_ = 0;
  bool in_range_ = true;
  uint64_t since_last_;  // candidates skipped since the last record
};

}  // namespace acc::recorder
