// The tensors an op's argument holds: a tensor, a list of them, or a list
// of optional tensors (Tensor?[]), for code that walks an op's inputs.
#pragma once

#include <ATen/core/ivalue.h>

namespace acc::recorder {

// A list's elements are read where they lie (toListRef), a tensor list's
// included: toTensorVector() would copy it, and isTensorList() is a call
// into libtorch, for every list argument of every op.
template <typename F>
void forEachTensor(const c10::IValue& v, F&& f) {
  if (v.isTensor()) {
    f(v.toTensor());
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) {
      if (e.isTensor()) f(e.toTensor());
    }
  }
}

}  // namespace acc::recorder
