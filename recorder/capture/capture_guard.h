// The guard under which acc runs its own ops, and its lazy form.
#pragma once

#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <optional>

namespace acc::recorder {

// Everything acc computes runs under this guard: the dispatcher does not
// report it to any observer (acc's own included), autograd does not see it,
// and the program's Python dispatch modes do not run on it (a
// TorchDispatchMode would otherwise see, and may fail, acc's copies of
// device tensors: seen with a mode on the test device, "Pinned memory
// requires CUDA").
class CaptureGuard {
 public:
  CaptureGuard() = default;

 private:
  at::DisableRecordFunctionGuard no_observers_;
  at::NoGradGuard no_grad_;
  c10::impl::ExcludeDispatchKeyGuard no_python_{c10::python_ks |
                                                c10::DispatchKeySet(c10::DispatchKey::PythonDispatcher)};
};

// A CaptureGuard taken at the first need() and held to the end of the
// scope: most tensors are read straight from memory and need none, and on
// torch 1.13 each guard rebuilds the thread's callback list twice.
class LazyCaptureGuard {
 public:
  void need() {
    if (!guard_) guard_.emplace();
  }
  bool held() const { return guard_.has_value(); }

 private:
  std::optional<CaptureGuard> guard_;
};

}  // namespace acc::recorder
