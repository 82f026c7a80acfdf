#include "recorder/python_stack.h"

#include <dlfcn.h>

namespace acc::recorder {
namespace {

template <typename F>
void resolve(F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

PythonStack::PythonStack() {
  resolve(is_initialized_, "Py_IsInitialized");
  resolve(is_finalizing_, "Py_IsFinalizing");
  if (is_finalizing_ == nullptr) resolve(is_finalizing_, "_Py_IsFinalizing");
  resolve(this_thread_state_, "PyGILState_GetThisThreadState");
  resolve(ensure_, "PyGILState_Ensure");
  resolve(release_gil_, "PyGILState_Release");
  resolve(get_frame_, "PyEval_GetFrame");
  resolve(frame_code_, "PyFrame_GetCode");
  resolve(frame_back_, "PyFrame_GetBack");
  resolve(frame_line_, "PyFrame_GetLineNumber");
  resolve(get_attr_, "PyObject_GetAttrString");
  resolve(as_utf8_, "PyUnicode_AsUTF8");
  resolve(decref_, "Py_DecRef");
  resolve(err_clear_, "PyErr_Clear");
  bool complete = is_initialized_ && this_thread_state_ && ensure_ && release_gil_ && get_frame_ &&
                  frame_code_ && frame_back_ && frame_line_ && get_attr_ && as_utf8_ && decref_ &&
                  err_clear_;
  if (!complete) ensure_ = nullptr;
}

void PythonStack::capture(
    size_t max_frames, const std::function<bool(const std::vector<PythonFrameKey>&)>& visit) const {
  if (!available() || !is_initialized_() || this_thread_state_() == nullptr) return;
  // Taking the GIL while the interpreter shuts down can hang the thread.
  if (is_finalizing_ != nullptr && is_finalizing_()) return;
  int gil = ensure_();
  std::vector<PythonFrameKey> frames;
  Ptr frame = get_frame_();  // borrowed
  Ptr owned = nullptr;
  while (frame != nullptr && frames.size() < max_frames) {
    frames.push_back({frame_code_(frame), frame_line_(frame)});  // new reference to the code
    Ptr back = frame_back_(frame);                                // new reference
    if (owned != nullptr) decref_(owned);
    owned = back;
    frame = back;
  }
  if (owned != nullptr) decref_(owned);
  if (!frames.empty() && !visit(frames)) {
    for (const PythonFrameKey& f : frames) decref_(const_cast<void*>(f.code));
  }
  release_gil_(gil);
}

std::string PythonStack::describe(const PythonFrameKey& frame) const {
  auto text = [&](const char* attr) {
    std::string out = "?";
    Ptr value = get_attr_(const_cast<void*>(frame.code), attr);
    if (value != nullptr) {
      if (const char* s = as_utf8_(value)) out = s;
      decref_(value);
    }
    err_clear_();
    return out;
  };
  return text("co_filename") + ":" + std::to_string(frame.line) + " " + text("co_name");
}

}  // namespace acc::recorder
