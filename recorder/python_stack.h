// Reads the calling thread's Python stack without linking libpython: the C
// API is looked up at run time, so C++ programs without Python work too.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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
  bool available() const { return ensure_ != nullptr; }

  // Calls `visit` with the GIL held and the frames innermost first; `visit`
  // returns true to keep the references to the frames' code objects (so
  // their addresses stay unique), false to drop them. Not called on threads
  // that never ran Python (autograd engine threads) or during finalization.
  void capture(size_t max_frames,
               const std::function<bool(const std::vector<PythonFrameKey>&)>& visit) const;
  // "file:line function" for one frame; only from inside `visit`.
  std::string describe(const PythonFrameKey& frame) const;

 private:
  using Ptr = void*;
  int (*is_initialized_)() = nullptr;
  int (*is_finalizing_)() = nullptr;  // Py_IsFinalizing (3.13) or _Py_IsFinalizing
  Ptr (*this_thread_state_)() = nullptr;
  int (*ensure_)() = nullptr;
  void (*release_gil_)(int) = nullptr;
  Ptr (*get_frame_)() = nullptr;
  Ptr (*frame_code_)(Ptr) = nullptr;
  Ptr (*frame_back_)(Ptr) = nullptr;
  int (*frame_line_)(Ptr) = nullptr;
  Ptr (*get_attr_)(Ptr, const char*) = nullptr;
  const char* (*as_utf8_)(Ptr) = nullptr;
  void (*decref_)(Ptr) = nullptr;
  void (*err_clear_)() = nullptr;
};

}  // namespace acc::recorder
