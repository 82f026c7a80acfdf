#include "format/random_ops.h"

namespace acc::format {
namespace {

// Tags came late to most of these ops (torch 1.13 tags ten of them), so
// the names are listed; the recorder's tag check catches what a later
// torch adds.
constexpr std::string_view kDraws[] = {
    "bernoulli",   "bernoulli_",   "binomial",   "cauchy",      "cauchy_",    "exponential", "exponential_",
    "geometric",   "geometric_",   "log_normal", "log_normal_", "multinomial", "normal",     "normal_",
    "poisson",     "rand",         "rand_like",  "randint",     "randint_like", "randn",     "randn_like",
    "randperm",    "random",       "random_",    "uniform",     "uniform_",   "_standard_gamma",
    "_sample_dirichlet",
};
constexpr std::string_view kComposites[] = {
    "dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_dropout_",
    "feature_alpha_dropout", "feature_alpha_dropout_", "lstm", "gru", "rnn_relu", "rnn_tanh",
    "scaled_dot_product_attention", "_scaled_dot_product_attention_math",
};
constexpr std::string_view kOpaque[] = {
    "_fused_dropout", "_cudnn_rnn", "rrelu_with_noise", "rrelu_with_noise_", "rrelu_with_noise_functional",
    "rrelu", "rrelu_", "_flash_attention_forward", "_efficient_attention_forward",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu",
    "_fused_rnn_dropout",
};

template <size_t N>
bool listed(const std::string_view (&names)[N], std::string_view op) {
  for (std::string_view n : names) {
    if (n == op) return true;
  }
  return false;
}

}  // namespace

RandomKind randomKindOf(std::string_view op) {
  if (op.substr(0, 6) != "aten::") return RandomKind::None;
  op.remove_prefix(6);
  if (op == "native_dropout") return RandomKind::DropoutMask;
  if (listed(kDraws, op)) return RandomKind::Draw;
  if (listed(kComposites, op)) return RandomKind::Composite;
  if (listed(kOpaque, op)) return RandomKind::Opaque;
  return RandomKind::None;
}

bool drawsMask(std::string_view op) {
  return op == "aten::bernoulli" || op == "aten::bernoulli_" || op == "aten::native_dropout";
}

}  // namespace acc::format
