// Checks that this binary and the running libtorch agree on the layout of
// at::RecordFunction (it changes with NDEBUG): a mismatch would silently
// read garbage in every callback. Used by the build (to pick the flags) and
// by the core at start (to refuse a mismatched torch).
#pragma once

#include <string>

namespace acc::recorder {

// Empty when the layout matches; otherwise what was observed.
std::string recordFunctionLayoutProblem();

}  // namespace acc::recorder
