// The few torch API differences between the versions acc builds against
// (1.13 from Debian, 2.x wheels), each behind one named function.
#pragma once

#include <ATen/Context.h>
#include <ATen/Version.h>
#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/version.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>

namespace acc::recorder::compat {

// The running torch's version, read from the library (not from headers), so
// a core loaded into a different torch can tell.
inline std::string runningTorchVersion() {
  const std::string config = at::show_config();
  const std::string key = "TORCH_VERSION=";
  size_t pos = config.find(key);
  if (pos == std::string::npos) return "unknown";
  pos += key.size();
  return config.substr(pos, config.find_first_of(", \n", pos) - pos);
}

// Identity of the autograd version counter `impl` shares with its views and
// detach()es (null when disabled: inference tensors). VariableVersion keeps
// its counter private; it is one intrusive_ptr in every torch acc builds
// against (1.13 to 2.14), which the static_assert pins down.
inline const void* versionCounterIdentity(const c10::TensorImpl& impl) {
  static_assert(sizeof(c10::VariableVersion) == sizeof(void*), "VariableVersion is no longer one pointer");
  const void* identity = nullptr;
  std::memcpy(&identity, &impl.version_counter(), sizeof identity);
  return identity;
}

// Thread id that autograd nodes remember as their forward thread.
inline uint64_t currentThreadId() { return at::RecordFunction::currentThreadId(); }

// Next autograd sequence number on this thread; nodes created by an op take
// the numbers between its start and end.
inline uint64_t peekSequenceNr() { return at::sequence_number::peek(); }

// The float32 precision settings of torch.backends (recorder/session/numeric_settings.cpp).
// From torch 2.9 on, the legacy getters throw when the program set the flags
// through the new fp32_precision API: then the new API answers.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 9)
#define ACC_HAS_FP32_PRECISION_API 1
inline std::string fp32Precision(at::Float32Backend backend, at::Float32Op op) {
  return at::precision2str(at::globalContext().float32Precision(backend, op));
}
#else
#define ACC_HAS_FP32_PRECISION_API 0
#endif

inline bool allowTF32Matmul() {
  try {
    return at::globalContext().allowTF32CuBLAS();
  } catch (const std::exception&) {
#if ACC_HAS_FP32_PRECISION_API
    return fp32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL) == "tf32";
#else
    return false;
#endif
  }
}

inline bool allowTF32Conv() {
  try {
    return at::globalContext().allowTF32CuDNN();
  } catch (const std::exception&) {
#if ACC_HAS_FP32_PRECISION_API
    return fp32Precision(at::Float32Backend::CUDA, at::Float32Op::CONV) == "tf32";
#else
    return false;
#endif
  }
}

// "highest", "high", "medium"; "" when the legacy getter refuses (torch >= 2.9
// after the new API set a state it cannot express).
inline std::string float32MatmulPrecision() {
  try {
    switch (at::globalContext().float32MatmulPrecision()) {
      case at::Float32MatmulPrecision::HIGHEST: return "highest";
      case at::Float32MatmulPrecision::HIGH: return "high";
      case at::Float32MatmulPrecision::MEDIUM: return "medium";
    }
  } catch (const std::exception&) {
  }
  return "";
}

// torch 2.14 answers with an enum whose first value allows the reduction.
template <typename T>
bool allowsReducedReduction(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v;
  } else {
    return static_cast<int>(v) == 0;
  }
}
inline bool allowFP16ReductionCuBLAS() { return allowsReducedReduction(at::globalContext().allowFP16ReductionCuBLAS()); }
// torch 1.13 has no such setting for bfloat16: nullopt.
template <typename Context>
auto allowBF16ReductionCuBLAS(const Context& c, int) -> decltype(c.allowBF16ReductionCuBLAS(), std::optional<bool>()) {
  return allowsReducedReduction(c.allowBF16ReductionCuBLAS());
}
template <typename Context>
std::optional<bool> allowBF16ReductionCuBLAS(const Context&, long) {
  return std::nullopt;
}
inline std::optional<bool> allowBF16ReductionCuBLAS() { return allowBF16ReductionCuBLAS(at::globalContext(), 0); }

// The dtype autocast casts to on a device type, where torch can say.
inline std::optional<at::ScalarType> autocastDtype(c10::DeviceType type) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  try {
    return at::autocast::get_autocast_dtype(type);
  } catch (const std::exception&) {
    return std::nullopt;
  }
#else
  if (type == c10::DeviceType::CPU) return at::autocast::get_autocast_cpu_dtype();
  if (type == c10::DeviceType::CUDA) return at::autocast::get_autocast_gpu_dtype();
  return std::nullopt;
#endif
}

using PostHook = torch::autograd::FunctionPostHook;
using VariableList = torch::autograd::variable_list;

}  // namespace acc::recorder::compat
