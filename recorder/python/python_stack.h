// Reads the calling thread's Python stack through the C API looked up at
// run time (recorder/python/python_api.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "recorder/python/python_api.h"

namespace acc::recorder {

struct PythonFrameKey {
  const void* code;  // code object, kept alive by the stack registry
  int line;
  bool operator==(const PythonFrameKey& o) const { return code == o.code && line == o.line; }
};

class PythonStack {
 public:
  // Resolves the C API; available() is false without an interpreter.
  PythonStack();
  bool available() const { return api_.available(); }

  // Calls `visit` with the GIL held and the frames innermost first; `visit`
  // returns true to keep the references to the frames' code objects (so
  // their addresses stay unique), false to drop them. Not called on threads
  // that never ran Python (autograd engine threads) or during finalization.
  void capture(size_t max_frames,
               const std::function<bool(const std::vector<PythonFrameKey>&)>& visit) const;
  // "file:line function" for one frame; only from inside `visit`.
  std::string describe(const PythonFrameKey& frame) const;

 private:
  const PythonApi& api_;
};

}  // namespace acc::recorder
