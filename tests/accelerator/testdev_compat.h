// The torch API differences the test accelerator meets, each named once.
#pragma once

#include <torch/version.h>

#include <optional>

#include <c10/util/Optional.h>

namespace testdev::compat {

#define TESTDEV_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// Optional arguments of ATen kernel signatures: c10's own type until 2.1,
// std::optional (which c10::optional names) from 2.2 on.
#if TESTDEV_TORCH_AT_LEAST(2, 2)
template <typename T>
using Optional = std::optional<T>;
#else
template <typename T>
using Optional = c10::optional<T>;
#endif

// Torch 2.x asks a PrivateUse1 backend for a hooks object (the autograd
// engine's device threads call it); 1.13 has no such interface, and 2.3
// added hasPrimaryContext to it.
#if TORCH_VERSION_MAJOR >= 2
#define TESTDEV_HAS_HOOKS 1
#else
#define TESTDEV_HAS_HOOKS 0
#endif
#if TESTDEV_TORCH_AT_LEAST(2, 3)
#define TESTDEV_HOOKS_PRIMARY_CONTEXT 1
#else
#define TESTDEV_HOOKS_PRIMARY_CONTEXT 0
#endif

}  // namespace testdev::compat
