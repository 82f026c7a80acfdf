#include "replay/autocast_casts.h"

#include <sstream>
#include <string>

#include "recorder/dtypes.h"

namespace acc::replay {
namespace {

bool floating(format::Dtype d) {
  return d == format::Dtype::Float16 || d == format::Dtype::BFloat16 || d == format::Dtype::Float32 ||
         d == format::Dtype::Float64;
}

bool narrow(format::Dtype d) { return d == format::Dtype::Float16 || d == format::Dtype::BFloat16; }

std::optional<c10::ScalarType> dtypeNamed(const std::string& name) {
  if (name == "bfloat16") return c10::kBFloat16;
  if (name == "float16") return c10::kHalf;
  if (name == "float32") return c10::kFloat;
  return std::nullopt;
}

// The autocast dtype for the op's device: the entry whose device type names
// the device of its first tensor ("cuda" for "cuda:0"), else the first one.
std::optional<c10::ScalarType> autocastDtype(const format::OpRecord& fwd) {
  std::string device;
  for (const format::Tensor& t : fwd.tensors) {
    if (!t.device.empty()) {
      device = t.device.substr(0, t.device.find(':'));
      break;
    }
  }
  std::optional<c10::ScalarType> first;
  std::stringstream entries(fwd.autocast);
  for (std::string entry; std::getline(entries, entry, ',');) {
    const size_t colon = entry.find(':');
    if (colon == std::string::npos) continue;
    std::optional<c10::ScalarType> d = dtypeNamed(entry.substr(colon + 1));
    if (!d) continue;
    if (entry.substr(0, colon) == device) return d;
    if (!first) first = d;
  }
  return first;
}

}  // namespace

AutocastCasts autocastCasts(const format::OpRecord& fwd, const format::OpRecord* bwd) {
  AutocastCasts casts;
  if (!fwd.has_autocast) return casts;
  const std::optional<c10::ScalarType> dtype = autocastDtype(fwd);
  if (!dtype) return casts;
  std::optional<format::Dtype> out;
  for (const format::Tensor& t : fwd.tensors) {
    if (t.role == format::Role::Output && floating(t.dtype)) {
      out = t.dtype;
      break;
    }
  }
  if (!out && bwd != nullptr) {
    for (const format::Tensor& t : bwd->tensors) {
      if (t.role == format::Role::GradIn && floating(t.dtype)) {
        out = t.dtype;
        break;
      }
    }
  }
  if (!out) return casts;
  bool narrow_input = false;
  for (const format::Tensor& t : fwd.tensors) narrow_input = narrow_input || (t.role == format::Role::Input && narrow(t.dtype));
  if (recorder::scalarTypeOf(*out) == *dtype) {
    casts.to = dtype;
  } else if (*out == format::Dtype::Float32 && narrow_input) {
    casts.to = c10::kFloat;
    casts.up = true;
  }
  return casts;
}

}  // namespace acc::replay
