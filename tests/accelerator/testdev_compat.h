// The torch API differences the test accelerator meets, each named once.
#pragma once

#include <torch/version.h>

#include <optional>

#include <c10/util/Optional.h>

namespace testdev::compat {

// Optional arguments of ATen kernel signatures: c10's own type on 1.13,
// std::optional from 2.0 on.
#if TORCH_VERSION_MAJOR < 2
template <typename T>
using Optional = c10::optional<T>;
#else
template <typename T>
using Optional = std::optional<T>;
#endif

// Torch 2.x asks a PrivateUse1 backend for a hooks object (the autograd
// engine's device threads call it); 1.13 has no such interface.
#if TORCH_VERSION_MAJOR >= 2
#define TESTDEV_HAS_HOOKS 1
#else
#define TESTDEV_HAS_HOOKS 0
#endif

}  // namespace testdev::compat
