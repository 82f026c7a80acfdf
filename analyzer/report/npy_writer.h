// NumPy .npy files (format version 1.0) from recorded tensor bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/record.h"

namespace acc::analyzer {

// The numpy dtype a recorded dtype is exported as ("<f4", "|b1", ...), empty
// when it has none. bfloat16 has no numpy dtype: it is exported as float32
// ("<f4"), which holds every bfloat16 value exactly.
std::string npyDescr(format::Dtype dtype);

// Writes `data` (row-major little-endian elements of `dtype`, as recorded) to
// `path` as a C-order array of `shape`. Throws std::runtime_error naming the
// path on I/O errors and when the byte count does not match the shape.
void writeNpy(const std::string& path, format::Dtype dtype, const std::vector<int64_t>& shape,
              const std::string& data);

}  // namespace acc::analyzer
