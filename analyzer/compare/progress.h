// compare's progress on stderr: a bar redrawn in place when stderr is a
// terminal, otherwise an occasional line; silent for short comparisons.
#pragma once

#include <chrono>
#include <cstdio>

#include "analyzer/compare/engine.h"

namespace acc::analyzer {

class ProgressReporter {
 public:
  // Detects whether `out` is a terminal; `command` names the lines' source.
  explicit ProgressReporter(std::FILE* out, const char* command = "compare");
  ProgressReporter(std::FILE* out, bool terminal, const char* command = "compare");
  void update(const CompareProgress& p);
  void finish();  // clears the bar

 private:
  std::FILE* out_;
  bool terminal_;
  const char* command_;
  bool shown_ = false;
  double last_ = 0;
};

}  // namespace acc::analyzer
