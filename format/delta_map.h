// How a delta (Tensor::delta_base) is made from values and its base, and
// undone: a plain XOR (format v8), or (v9) the XOR with the base's values
// mapped first (Tensor::delta_map).
// An in-place `mul_` by a decay or an `add_` of an epsilon changes every
// mantissa bit of what it overwrote, so the plain XOR (v8) stays about as
// large as the values; the XOR with what the op computes on the base, done
// again here, is all zeros wherever the op's kernel rounds as IEEE does.
// So is an out-of-place op's output XOR'ed with its input's sqrt, or its
// input divided by a number (an optimizer's denominator), where a delta
// on its input would gain nothing.
// The recorder and every reader run this one function, in IEEE's default
// rounding with subnormals kept whatever the program set, so that the
// bytes a reader gets back are the recorded ones on any machine.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/record.h"

namespace acc::format {

// Whether `map` with `scalar` is defined on elements of `dtype`: float32 and
// float64, a finite scalar. Readers refuse others.
bool deltaMapDefined(DeltaMap map, Dtype dtype, double scalar);

// out[i] = bits(map(base[i])) ^ other[i] for the `size` bytes' whole
// elements; bytes after the last are XOR'ed as they are. `out` may be
// `base` or `other`. float32 maps compute in float32 with the scalar
// rounded to it (as torch's kernels do for a Python number), float64 in
// float64; Sqrt ignores the scalar (0). A map not defined there
// (deltaMapDefined, which readers check while decoding) is taken as none.
void xorMapped(const char* base, const char* other, char* out, size_t size, Dtype dtype, DeltaMap map,
               double scalar);

}  // namespace acc::format
