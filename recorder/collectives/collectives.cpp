#include "recorder/collectives/collectives.h"

#if __has_include(<torch/csrc/distributed/c10d/Work.hpp>)
#include <torch/csrc/distributed/c10d/Work.hpp>
#define ACC_HAS_C10D 1
#else
#define ACC_HAS_C10D 0  // a torch built without distributed support
#endif

#include <ATen/core/class_type.h>

#include <memory>

namespace acc::recorder {

bool fillsArgument0(std::string_view op) {
  constexpr std::string_view kFilling[] = {
      "c10d::allgather_", "c10d::_allgather_base_", "c10d::allgather_coalesced_",
      "c10d::allgather_into_tensor_coalesced_", "c10d::reduce_scatter_", "c10d::_reduce_scatter_base_",
      "c10d::reduce_scatter_tensor_coalesced_", "c10d::scatter_", "c10d::alltoall_", "c10d::alltoall_base_",
      "c10d::gather_", "c10d::gather_into_tensor_", "c10d::recv_", "c10d::recv_any_source_"};
  for (std::string_view name : kFilling) {
    if (op == name) return true;
  }
  return false;
}

bool whenComplete(const std::vector<c10::IValue>& outputs, std::function<void()> done) {
#if ACC_HAS_C10D
  for (const c10::IValue& v : outputs) {
    // The work is a TorchBind object; its type is known by name, so acc
    // needs none of c10d's symbols (a torch may be built without them).
    if (!v.isObject()) continue;
    const c10::ivalue::Object& object = v.toObjectRef();
    const auto name = object.type()->name();
    if (!name || name->qualifiedName() != "__torch__.torch.classes.c10d.Work" || object.slots().size() != 1 ||
        !object.getSlot(0).isCapsule()) {
      continue;
    }
    auto* work = static_cast<c10d::Work*>(object.getSlot(0).toCapsule().get());
    c10::intrusive_ptr<c10::ivalue::Future> future;
    try {
      future = work->getFuture();  // virtual: no link-time dependency
    } catch (...) {
      return false;  // this backend's work has no future
    }
    if (!future) return false;
    future->addCallback([done = std::move(done)](c10::ivalue::Future&) { done(); });
    return true;
  }
#else
  (void)outputs;
  (void)done;
#endif
  return false;
}

}  // namespace acc::recorder
