// compare's progress on stderr: a bar redrawn in place when stderr is a
// terminal; otherwise nothing (output piped to a file stays the verdict),
// or with --progress an occasional line for a log. Silent for short
// comparisons.
#pragma once

#include <chrono>
#include <cstdio>

#include "analyzer/compare/engine.h"

namespace acc::analyzer {

class ProgressReporter {
 public:
  // Detects whether `out` is a terminal; `command` names the lines' source;
  // `lines`: progress lines when it is not one.
  ProgressReporter(std::FILE* out, const char* command, bool lines);
  // As a log (not a terminal) receives them.
  ProgressReporter(std::FILE* out, bool terminal, const char* command = "compare");
  void update(const CompareProgress& p);
  void finish();  // clears the bar

 private:
  std::FILE* out_;
  bool terminal_;
  bool silent_ = false;
  const char* command_;
  bool shown_ = false;
  double last_ = 0;
};

}  // namespace acc::analyzer
