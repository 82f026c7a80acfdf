// JSON form of records, shared by every command's --json output.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>

#include "format/record.h"

namespace acc::analyzer {

// JSON has no NaN or infinity: they are written as the strings "nan",
// "inf" and "-inf".
nlohmann::json jsonNumber(double v);

nlohmann::json statsJson(const format::Stats& s);
nlohmann::json tensorJson(const format::Tensor& t);
nlohmann::json recordJson(const format::OpRecord& r, int64_t rank);
nlohmann::json stackJson(const format::StackRecord& s);

}  // namespace acc::analyzer
