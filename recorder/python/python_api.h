// The few CPython C API functions the recorder calls, looked up at run time:
// the recorder never links libpython, so C++ programs without an interpreter
// load it too (and every function is then null).
#pragma once

namespace acc::recorder {

struct PythonApi {
  using Obj = void*;  // PyObject*

  // Resolved once per process; available() is false without an interpreter.
  static const PythonApi& get();
  bool available() const { return ensure != nullptr; }
  // Whether this thread may take the GIL now: an initialized interpreter that
  // is not shutting down (taking the GIL then can hang the thread), and a
  // thread that has run Python (autograd engine threads have not).
  bool callable() const;

  int (*is_initialized)() = nullptr;
  int (*is_finalizing)() = nullptr;  // Py_IsFinalizing (3.13) or _Py_IsFinalizing
  Obj (*this_thread_state)() = nullptr;
  int (*ensure)() = nullptr;
  void (*release)(int) = nullptr;
  Obj (*save_thread)() = nullptr;        // PyEval_SaveThread
  void (*restore_thread)(Obj) = nullptr;  // PyEval_RestoreThread
  // Frames.
  Obj (*get_frame)() = nullptr;
  Obj (*frame_code)(Obj) = nullptr;
  Obj (*frame_back)(Obj) = nullptr;
  int (*frame_line)(Obj) = nullptr;
  // Objects.
  Obj (*get_attr)(Obj, const char*) = nullptr;
  int (*is_true)(Obj) = nullptr;
  const char* (*as_utf8)(Obj) = nullptr;
  Obj (*long_from)(long) = nullptr;
  long (*as_long)(Obj) = nullptr;
  void (*incref)(Obj) = nullptr;
  void (*decref)(Obj) = nullptr;
  Obj (*err_occurred)() = nullptr;
  void (*err_clear)() = nullptr;
  // Running code (recorder/python/python_hooks.cpp).
  Obj (*module_dict)() = nullptr;  // sys.modules, borrowed
  Obj (*dict_new)() = nullptr;
  Obj (*dict_get)(Obj, const char*) = nullptr;  // borrowed
  int (*dict_set)(Obj, const char*, Obj) = nullptr;
  Obj (*import)(const char*) = nullptr;
  Obj (*new_function)(void*, Obj, Obj) = nullptr;  // PyCFunction_NewEx
  Obj (*run)(const char*, int, Obj, Obj, void*) = nullptr;  // PyRun_StringFlags
  Obj (*call)(Obj, Obj) = nullptr;                          // PyObject_CallObject

 private:
  PythonApi();
};

// Holds the GIL for its scope (PyGILState_Ensure/Release).
class Gil {
 public:
  explicit Gil(const PythonApi& api) : api_(api), state_(api.ensure()) {}
  ~Gil() { api_.release(state_); }
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;

 private:
  const PythonApi& api_;
  int state_;
};

// Lets go of the GIL this thread holds for its scope (PyEval_SaveThread/
// RestoreThread): for waits on threads that may need it.
class GilReleased {
 public:
  explicit GilReleased(const PythonApi& api) : api_(api), state_(api.save_thread()) {}
  ~GilReleased() { api_.restore_thread(state_); }
  GilReleased(const GilReleased&) = delete;
  GilReleased& operator=(const GilReleased&) = delete;

 private:
  const PythonApi& api_;
  PythonApi::Obj state_;
};

}  // namespace acc::recorder
