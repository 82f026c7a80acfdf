// A deliberately wrong CPU kernel for the compare and watch tests: loaded
// into a recorded Python process with torch.ops.load_library(), it replaces
// the CPU kernel of aten::gelu (WRONG_GELU unset, "fwd" or "nan-fwd") or of
// aten::gelu_backward ("bwd" or "nan-bwd") with one that computes the right
// values and then adds a relative error of about 1e-3 ("fwd", "bwd") or, at
// its call WRONG_GELU_CALL (from 0), writes a NaN into the first element
// ("nan-fwd", "nan-bwd": ACC_WATCH's tests), or throws from the backward
// kernel ("throw-bwd": a backward pass that fails, as an unimplemented
// kernel does). The reference run does not load it.
#include <torch/library.h>
#include <ATen/ATen.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace {

constexpr double kRelativeError = 1e-3;

// Alternating +-1e-3 relative perturbation, so the error is not a pure scale
// (which cosine similarity would not see).
at::Tensor perturb(const at::Tensor& exact) {
  at::Tensor sign = at::ones_like(exact);
  sign.view(-1).slice(0, 1, c10::nullopt, 2).fill_(-1);
  return exact + exact * sign * kRelativeError;
}

// gelu(x) = x * Phi(x) (approximate "none"), or the tanh approximation.
at::Tensor exactGelu(const at::Tensor& x, c10::string_view approximate) {
  if (approximate == "tanh") {
    const double k = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1 + at::tanh(k * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1 + at::erf(x * M_SQRT1_2));
}

// "nan-fwd" and "nan-bwd": exact values, but a NaN at one call.
bool g_nan = false;
long g_nan_call = 0;

at::Tensor damage(at::Tensor exact) {
  if (!g_nan) return perturb(exact);
  static long calls = 0;
  if (calls++ == g_nan_call) exact.view(-1)[0].fill_(std::numeric_limits<double>::quiet_NaN());
  return exact;
}

at::Tensor wrongGelu(const at::Tensor& self, c10::string_view approximate) {
  return damage(exactGelu(self, approximate));
}

at::Tensor wrongGeluBackward(const at::Tensor& grad, const at::Tensor& self, c10::string_view approximate) {
  at::Tensor derivative;
  if (approximate == "tanh") {
    const double k = std::sqrt(2.0 / M_PI);
    at::Tensor inner = k * (self + 0.044715 * self * self * self);
    at::Tensor t = at::tanh(inner);
    derivative = 0.5 * (1 + t) + 0.5 * self * (1 - t * t) * k * (1 + 3 * 0.044715 * self * self);
  } else {
    at::Tensor cdf = 0.5 * (1 + at::erf(self * M_SQRT1_2));
    at::Tensor pdf = at::exp(-0.5 * self * self) * (1 / std::sqrt(2 * M_PI));
    derivative = cdf + self * pdf;
  }
  return damage(grad * derivative);
}

at::Tensor throwingGeluBackward(const at::Tensor&, const at::Tensor&, c10::string_view) {
  TORCH_CHECK(false, "gelu_backward: no kernel (WRONG_GELU=throw-bwd)");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, CPU, m) {
  const char* which = std::getenv("WRONG_GELU");
  const char* call = std::getenv("WRONG_GELU_CALL");
  g_nan = which != nullptr && std::strncmp(which, "nan-", 4) == 0;
  g_nan_call = call != nullptr ? std::atol(call) : 0;
  if (which != nullptr && std::strcmp(which, "throw-bwd") == 0) {
    m.impl("gelu_backward", TORCH_FN(throwingGeluBackward));
  } else if (which != nullptr && (std::strcmp(which, "bwd") == 0 || std::strcmp(which, "nan-bwd") == 0)) {
    m.impl("gelu_backward", TORCH_FN(wrongGeluBackward));
  } else {
    m.impl("gelu", TORCH_FN(wrongGelu));
  }
}
