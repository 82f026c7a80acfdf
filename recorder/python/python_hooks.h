// What the recorder learns from inside a Python program, with no change to
// it: once torch's import has completed, it registers torch's global module
// hooks, which keep each thread's module stack (recorder/python/module_paths.h) and
// know the outermost modules, whose parameters' gradients it hands over at
// each optimizer step (ACC_GRADS).
#pragma once

#include <atomic>
#include <string>

namespace acc::recorder {

class PythonHooks {
 public:
  // The process's one set: torch's hooks outlive recording sessions.
  static PythonHooks& instance();

  // Registers the hooks if the calling thread runs Python and torch's import
  // has completed; does nothing once they are registered or cannot be.
  // Cheap after that (one relaxed load): call it on every op.
  void tryInstall(bool quiet) {
    if (state_.load(std::memory_order_relaxed) < kInstalling) install(quiet);
  }

  // Whether the hooks are registered: records then carry a module path.
  bool installed() const { return state_.load(std::memory_order_acquire) == kInstalled; }

  // Hands every parameter gradient of the outermost modules called so far
  // to this thread's next ops, one `aten::alias` of the gradient each, with
  // pendingGradient() set to the parameter's path: the observer records it
  // as `grad::{path}` and the op goes on unrecorded. False when the hooks
  // are not installed or the Python call failed.
  bool handOverGradients();

  // The parameter path of the gradient the next op on this thread carries;
  // empty when it carries none. The observer clears it.
  static std::string& pendingGradient();

 private:
  PythonHooks() = default;
  void install(bool quiet);

  enum State : int { kWaiting = 0, kInstalling = 1, kInstalled = 2, kUnavailable = 3 };
  std::atomic<int> state_{kWaiting};
  void* grads_ = nullptr;  // the Python function that hands gradients over (a strong reference)
};

}  // namespace acc::recorder
