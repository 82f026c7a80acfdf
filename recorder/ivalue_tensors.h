// The tensors an op's argument holds: a tensor, a list of them, or a list
// of optional tensors (Tensor?[]), for code that walks an op's inputs.
#pragma once

#include <ATen/core/ivalue.h>

namespace acc::recorder {

template <typename F>
void forEachTensor(const c10::IValue& v, F&& f) {
  if (v.isTensor()) {
    f(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) f(t);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) {
      if (e.isTensor()) f(e.toTensor());
    }
  }
}

}  // namespace acc::recorder
