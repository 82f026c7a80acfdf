// Single-tensor PyTorch files (torch.save(tensor)): what msprobe writes for
// each tensor of a "tensor" task dump, read and written without torch.
//
// A .pt file is a zip archive (entries stored, not compressed) holding
// data.pkl, a pickle (protocol 2) that rebuilds the tensor with
// torch._utils._rebuild_tensor_v2 from a storage, and data/{key}, the
// storage's little-endian bytes. Only that much of pickle is understood
// here: the globals torch.load(weights_only=True) allows for one tensor.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/record.h"

namespace acc::analyzer::msprobe {

struct PtTensor {
  format::Dtype dtype = format::Dtype::Unknown;
  std::vector<int64_t> shape;
  std::string data;  // row-major, contiguous, little-endian
};

struct PtError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws PtError naming the file and what is wrong with it.
PtTensor readPt(const std::string& path);
// Writes `t` so that torch.load(path, weights_only=True) returns it (CPU,
// contiguous). Throws PtError for a dtype torch.save has no storage for.
void writePt(const std::string& path, const PtTensor& t);

}  // namespace acc::analyzer::msprobe
