#include "recorder/session/numeric_settings.h"

#include <c10/core/DefaultDtype.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "recorder/per_thread.h"
#include "recorder/torch_compat.h"

namespace acc::recorder {
namespace {

std::string dtypeName(c10::ScalarType t) {
  // c10's names are the C++ ones ("Float"); users know torch.float32.
  switch (t) {
    case c10::kHalf: return "float16";
    case c10::kBFloat16: return "bfloat16";
    case c10::kFloat: return "float32";
    case c10::kDouble: return "float64";
    default: return c10::toString(t);
  }
}

// Keys named as torch.backends and torch's functions name them.
nlohmann::json readSettings() {
  const at::Context& ctx = at::globalContext();
  nlohmann::json v = {
      {"torch.backends.cuda.matmul.allow_tf32", compat::allowTF32Matmul()},
      {"torch.backends.cudnn.allow_tf32", compat::allowTF32Conv()},
      {"torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction", compat::allowFP16ReductionCuBLAS()},
      {"torch.are_deterministic_algorithms_enabled", ctx.deterministicAlgorithms()},
      {"torch.is_deterministic_algorithms_warn_only_enabled", ctx.deterministicAlgorithmsWarnOnly()},
      {"torch.get_default_dtype", dtypeName(c10::get_default_dtype_as_scalartype())},
  };
  if (auto bf16 = compat::allowBF16ReductionCuBLAS()) {
    v["torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction"] = *bf16;
  }
  const std::string precision = compat::float32MatmulPrecision();
  if (!precision.empty()) v["torch.get_float32_matmul_precision"] = precision;
#if ACC_HAS_FP32_PRECISION_API
  v["torch.backends.cuda.matmul.fp32_precision"] = compat::fp32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL);
  v["torch.backends.cudnn.conv.fp32_precision"] = compat::fp32Precision(at::Float32Backend::CUDA, at::Float32Op::CONV);
#endif
  return v;
}

// "AutocastCUDA" -> "cuda".
std::string autocastDevice(c10::DispatchKey key) {
  std::string name = c10::toString(key);
  if (name.rfind("Autocast", 0) == 0) name = name.substr(8);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

// The device type whose autocast dtype torch can report, by key name (the
// keys differ between torch versions; c10::toString allocates nothing).
std::optional<c10::DeviceType> deviceTypeOf(c10::DispatchKey key) {
  const char* name = c10::toString(key);
  if (std::strcmp(name, "AutocastCPU") == 0) return c10::DeviceType::CPU;
  if (std::strcmp(name, "AutocastCUDA") == 0) return c10::DeviceType::CUDA;
  if (std::strcmp(name, "AutocastXPU") == 0) return c10::DeviceType::XPU;
  if (std::strcmp(name, "AutocastPrivateUse1") == 0) return c10::DeviceType::PrivateUse1;
  return std::nullopt;
}

}  // namespace

void NumericSettings::sample() {
  nlohmann::json now;
  try {
    now = readSettings();
  } catch (const std::exception&) {
    // acc never fails the program; the manifest keeps the last values, and
    // ops do not try again (the next optimizer step does).
    sampled_.store(true, std::memory_order_release);
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [key, value] : now.items()) {
    if (values_.contains(key) && values_[key] != value) changed_.insert(key);
    values_[key] = value;
  }
  sampled_.store(true, std::memory_order_release);
}

std::string NumericSettings::onRecordedOp() {
  if (!sampled_.load(std::memory_order_acquire)) sample();
  return noteAutocast();
}

std::string NumericSettings::noteAutocast() {
  // Autocast is on for a device while its key is not excluded on this thread.
  const c10::DispatchKeySet excluded = c10::impl::tls_local_dispatch_key_set().excluded_;
  c10::DispatchKeySet off = excluded & c10::autocast_dispatch_keyset;  // 1.13: raw_repr() is not const
  if (off == c10::autocast_dispatch_keyset) return std::string();
  // Which devices have it on, with which dtype: noted (names built) only
  // when that changes on this thread.
  uint64_t state = off.raw_repr();
  std::vector<std::pair<c10::DispatchKey, std::optional<at::ScalarType>>> on;
  c10::DispatchKeySet all = c10::autocast_dispatch_keyset;  // torch 1.13 iterates non-const sets only
  for (c10::DispatchKey key : all) {
    if (off.has(key)) continue;
    std::optional<at::ScalarType> dtype;
    if (auto type = deviceTypeOf(key)) dtype = compat::autocastDtype(*type);
    state = state * 31 + (dtype ? static_cast<uint64_t>(*dtype) + 1 : 0);
    on.emplace_back(key, dtype);
  }
  // The state's text, kept per thread (per_thread.h): built again only when
  // the state changes, and at every op of a thread whose exit began.
  struct Noted {
    bool known = false;
    uint64_t last = 0;
    std::string text;
  };
  Noted* noted = PerThread<Noted>::get();
  if (noted != nullptr && noted->known && noted->last == state) return noted->text;
  std::string joined;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [key, dtype] : on) {
      const std::string one = autocastDevice(key) + (dtype ? ":" + dtypeName(*dtype) : "");
      autocast_.insert(one);
      joined += (joined.empty() ? "" : ",") + one;
    }
  }
  if (noted != nullptr) {
    noted->known = true;
    noted->last = state;
    noted->text = joined;
  }
  return joined;
}

nlohmann::json NumericSettings::toJson() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (values_.empty()) return nlohmann::json::object();
  nlohmann::json j = values_;
  j["autocast"] = autocast_;
  j["changed"] = changed_;
  return j;
}

}  // namespace acc::recorder
