// Whether tensors hold only finite values, for ACC_WATCH=naninf (watch.h).
// One question, two implementations: a CPU tensor is answered at once by a
// scan of its exponent bits (no op, as fast as memory); a device tensor by
// one aminmax kernel on its device, whose two values the caller copies to
// the host behind the op's kernels and reads when they have arrived. A min
// or max that is NaN or infinite is exactly a tensor with a NaN or an
// infinity (aminmax propagates NaN), in the tensor's own type, so half and
// bfloat16 overflow counts and large finite values never look infinite.
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace acc::recorder {

// What a tensor holds besides finite values; the order is severity.
enum class Finiteness : int8_t { Finite = 0, Infinite = 1, NaN = 2 };

// Floating or complex tensors with readable, non-empty memory: the only
// ones that can hold a NaN or an infinity.
bool checkable(const at::Tensor& t);

// CPU, checkable: true when every element is finite. Dense tensors are read
// in place; others are copied first (an op: call under a CaptureGuard).
bool hostAllFinite(const at::Tensor& t);

// CPU, checkable: hostAllFinite, and when false whether a NaN is among the
// non-finite values (a second pass: for the rare tensor that has some).
Finiteness hostFiniteness(const at::Tensor& t);

// Device, checkable: appends t's min and max (0-dim tensors of t's real
// type, on t's device), queued behind the kernels before it.
void deviceExtremes(const at::Tensor& t, std::vector<at::Tensor>& out);

// What host values read back from deviceExtremes say: a NaN min or max is
// a NaN in the tensor, an infinite one an infinity.
Finiteness extremesFiniteness(const at::Tensor& host);

// Any checkable tensor, waiting for its device: for the one check after a
// find, never per op.
Finiteness finitenessNow(const at::Tensor& t);

}  // namespace acc::recorder
