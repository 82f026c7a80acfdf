// The floor of any dispatcher observer: a RecordFunction callback that asks
// for every op's inputs and outputs (so the dispatcher boxes them, as it
// does for acc) and does nothing with them. bench/overhead.py and
// bench/per_op.py load it into an unrecorded run ("floor") and print what
// acc costs above it, in microseconds per op.
//   python -c "import torch; torch.ops.load_library('build/lib/libacc_callback_floor.so'); ..."
#include <ATen/record_function.h>

#include <memory>

namespace {

std::unique_ptr<at::ObserverContext> onStart(const at::RecordFunction& fn) {
  // Read what acc reads first, so the boxing cannot be optimised away.
  volatile size_t inputs = fn.inputs().size();
  (void)inputs;
  return nullptr;
}

void onEnd(const at::RecordFunction&, at::ObserverContext*) {}

const at::CallbackHandle g_handle = at::addGlobalCallback(
    at::RecordFunctionCallback(onStart, onEnd)
        .needsInputs(true)
        .needsOutputs(true)
        .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE}));

}  // namespace
