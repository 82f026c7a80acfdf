// A small CompareResult built by hand for the report tests: eleven records
// over two steps, forward and backward, two origins, failing, warning and
// passing tensors, a NaN mismatch, a shape mismatch, a level-1 pair, an
// unmatched record, and names that need escaping (< > & ').
#pragma once

#include "analyzer/common/result.h"

namespace acc::test {

analyzer::CompareResult syntheticResult();

// `records` records of two tensor pairs each, errors growing after an
// origin in the middle: for size and speed checks.
analyzer::CompareResult largeResult(size_t records);

}  // namespace acc::test
