#include "analyzer/msprobe/torch_types.h"

namespace acc::analyzer::msprobe {
namespace {

using format::Dtype;

struct TorchType {
  Dtype dtype;
  const char* name;     // in dump.json
  const char* storage;  // in a .pt file (torch.save of every torch since 1.13)
};
constexpr TorchType kTypes[] = {
    {Dtype::Bool, "torch.bool", "BoolStorage"},
    {Dtype::UInt8, "torch.uint8", "ByteStorage"},
    {Dtype::Int8, "torch.int8", "CharStorage"},
    {Dtype::Int16, "torch.int16", "ShortStorage"},
    {Dtype::Int32, "torch.int32", "IntStorage"},
    {Dtype::Int64, "torch.int64", "LongStorage"},
    {Dtype::Float16, "torch.float16", "HalfStorage"},
    {Dtype::BFloat16, "torch.bfloat16", "BFloat16Storage"},
    {Dtype::Float32, "torch.float32", "FloatStorage"},
    {Dtype::Float64, "torch.float64", "DoubleStorage"},
    {Dtype::Complex64, "torch.complex64", "ComplexFloatStorage"},
    {Dtype::Complex128, "torch.complex128", "ComplexDoubleStorage"},
};

}  // namespace

Dtype dtypeOfTorchName(const std::string& name) {
  for (const TorchType& t : kTypes) {
    if (name == t.name) return t.dtype;
  }
  return Dtype::Unknown;
}

std::string torchName(Dtype d) {
  for (const TorchType& t : kTypes) {
    if (t.dtype == d) return t.name;
  }
  return "torch.unknown";
}

Dtype dtypeOfStorage(const std::string& storage_class) {
  for (const TorchType& t : kTypes) {
    if (storage_class == t.storage) return t.dtype;
  }
  return Dtype::Unknown;
}

const char* storageClass(Dtype d) {
  for (const TorchType& t : kTypes) {
    if (t.dtype == d) return t.storage;
  }
  return nullptr;
}

}  // namespace acc::analyzer::msprobe
