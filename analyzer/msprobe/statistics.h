// acc's statistics (format::Stats) of the tensors in an msprobe dump.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "format/record.h"

namespace acc::analyzer::msprobe {

// Of a tensor's row-major bytes, as the recorder computes them on the CPU
// (docs/FORMAT.md, "Statistics"): exact counts and checksum.
format::Stats statsOfData(format::Dtype dtype, const std::string& data);

// Of a statistics-task leaf: Max, Min, Mean and Norm as msprobe took them
// (null: NaN, as for integers' mean). msprobe keeps no counts and no
// checksum: nan_count and inf_count say only whether a statistic is NaN or
// infinite (0 or 1), and the checksum is a fingerprint of the dtype, shape,
// statistics and msprobe's crc ("md5") when present, so that tensors with
// the same statistics read as the same contents (what msprobe's own compare
// assumes).
format::Stats statsOfLeaf(const nlohmann::ordered_json& leaf, format::Dtype dtype, const std::vector<int64_t>& shape);

}  // namespace acc::analyzer::msprobe
