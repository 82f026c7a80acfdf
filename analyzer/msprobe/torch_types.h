// torch's element types as msprobe's files name them: "torch.float32" in
// dump.json, the legacy storage class FloatStorage in a .pt file's pickle.
#pragma once

#include <string>

#include "format/record.h"

namespace acc::analyzer::msprobe {

// Unknown for names acc has no type for.
format::Dtype dtypeOfTorchName(const std::string& name);
std::string torchName(format::Dtype d);  // "torch.unknown" for Unknown

format::Dtype dtypeOfStorage(const std::string& storage_class);  // "FloatStorage"
const char* storageClass(format::Dtype d);  // null when torch.save has none

}  // namespace acc::analyzer::msprobe
