#include "recorder/session/abi_check.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>

#include <cstring>

namespace acc::recorder {
namespace {

struct Observed {
  bool called = false;
  size_t inputs = 0;
  bool name_ok = false;
};
thread_local Observed observed;

std::unique_ptr<at::ObserverContext> probeStart(const at::RecordFunction& fn) {
  if (std::strcmp(fn.name(), "aten::add") == 0) {
    observed.called = true;
    observed.name_ok = true;
    observed.inputs = fn.inputs().size();
  }
  return nullptr;
}

}  // namespace

std::string recordFunctionLayoutProblem() {
  observed = Observed{};
  auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(probeStart).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
  {
    at::RecordFunctionGuard enable(true);
    at::NoGradGuard no_grad;
    at::Tensor a = at::ones({2});
    at::Tensor b = at::add(a, a, 1);
  }
  at::removeCallback(handle);
  if (!observed.called) return "aten::add was not observed";
  // aten::add.Tensor takes (self, other, alpha).
  if (observed.inputs != 3) {
    return "aten::add reported " + std::to_string(observed.inputs) +
           " inputs instead of 3 (NDEBUG differs from the torch build)";
  }
  return "";
}

}  // namespace acc::recorder
