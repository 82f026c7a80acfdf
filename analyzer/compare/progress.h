// compare's progress on stderr: a bar redrawn in place when stderr is a
// terminal, otherwise an occasional line; silent for short comparisons.
#pragma once

#include <chrono>
#include <cstdio>

#include "analyzer/compare/engine.h"

namespace acc::analyzer {

class ProgressReporter {
 public:
  explicit ProgressReporter(std::FILE* out);  // detects whether `out` is a terminal
  ProgressReporter(std::FILE* out, bool terminal);
  void update(const CompareProgress& p);
  void finish();  // clears the bar

 private:
  std::FILE* out_;
  bool terminal_;
  bool shown_ = false;
  double last_ = 0;
};

}  // namespace acc::analyzer
