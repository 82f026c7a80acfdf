#include "recorder/python/python_stack.h"

namespace acc::recorder {

PythonStack::PythonStack() : api_(PythonApi::get()) {}

void PythonStack::capture(
    size_t max_frames, const std::function<bool(const std::vector<PythonFrameKey>&)>& visit) const {
  if (!api_.callable()) return;
  Gil gil(api_);
  std::vector<PythonFrameKey> frames;
  PythonApi::Obj frame = api_.get_frame();  // borrowed
  PythonApi::Obj owned = nullptr;
  while (frame != nullptr && frames.size() < max_frames) {
    frames.push_back({api_.frame_code(frame), api_.frame_line(frame)});  // new reference to the code
    PythonApi::Obj back = api_.frame_back(frame);                        // new reference
    if (owned != nullptr) api_.decref(owned);
    owned = back;
    frame = back;
  }
  if (owned != nullptr) api_.decref(owned);
  if (!frames.empty() && !visit(frames)) {
    for (const PythonFrameKey& f : frames) api_.decref(const_cast<void*>(f.code));
  }
}

std::string PythonStack::describe(const PythonFrameKey& frame) const {
  auto text = [&](const char* attr) {
    std::string out = "?";
    PythonApi::Obj value = api_.get_attr(const_cast<void*>(frame.code), attr);
    if (value != nullptr) {
      if (const char* s = api_.as_utf8(value)) out = s;
      api_.decref(value);
    }
    api_.err_clear();
    return out;
  };
  return text("co_filename") + ":" + std::to_string(frame.line) + " " + text("co_name");
}

}  // namespace acc::recorder
