#include "recorder/capture/tensor_capture.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cmath>
#include <cstring>

#include "format/delta_map.h"
#include "recorder/capture/device/device_capture.h"
#include "recorder/write/record_batch.h"
#include "recorder/write/record_pool.h"
#include "recorder/capture/cpu/tensor_stats.h"
#include "recorder/dtypes.h"
#include "recorder/per_thread.h"
#include "recorder/torch_compat.h"

namespace acc::recorder {
namespace {

// A device's name as records spell it ("cpu", "cuda:0"). The CPU's is copied
// from one string made once and never destroyed (ops may still be recorded
// while the process exits); another device's is kept per thread with the
// device it names (a model's tensors are on one device or two).
// Device::str() built either anew for every tensor.
struct LastDevice {
  c10::Device device{c10::kCPU};  // never asked for: the CPU without an index returns above
  std::string name;
};

void assignDeviceName(std::string& out, c10::Device d) {
  static const std::string* const cpu = new std::string(c10::Device(c10::kCPU).str());
  if (d.is_cpu() && !d.has_index()) {
    // A pooled tensor keeps its last device (record_pool.h, appendTensor),
    // nearly always this one: compared inline, not copied out of line
    // (about 0.07 M instructions a step on the transformer LM).
    if (out.size() != 3 || std::memcmp(out.data(), "cpu", 3) != 0) out = *cpu;
    return;
  }
  LastDevice* last = PerThread<LastDevice>::get();
  if (last == nullptr) {  // the thread is exiting
    out = d.str();
    return;
  }
  if (last->device != d) {
    last->device = d;
    last->name = d.str();
  }
  out = last->name;
}

// The paths a record at level 0 or 1 without number arguments never takes
// (a number's text, level 2's bytes and deltas) are out of line
// ([[gnu::noinline]]): inlined, each called once, they made captureValue
// 14 KB of code, which the per-op path runs through beside torch's
// dispatcher in the instruction cache (docs/guide/performance.md, "Per op").

// 17 significant digits, and always recognisable as a float ("1.0", not
// "1"): replay passes a Scalar argument as the type it had, which decides
// type promotion (an int tensor plus 1 stays int, plus 1.0 does not).
// to_chars writes what printf's %.17g (and a stream at precision 17) writes,
// without a stream's locale and allocations: the stream took about 5% of
// acc's time on the op thread of a transformer LM trained with AdamW,
// whose every update op carries scalars (perf, November 2026).
std::string formatDouble(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buffer[32];
  char* end = std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::general, 17).ptr;
  std::string text(buffer, end);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

// The texts of the last numbers this thread formatted, by their bits: an
// optimizer hands the same few numbers (a learning rate, 1 - beta, a step
// size) to every parameter's ops, step after step, and formatting 17 digits
// took about 950 instructions a number (callgrind, December 2026: 92 numbers
// a step on the transformer LM with AdamW, 1 of them new a step).
struct NumberTexts {
  struct Entry {
    uint64_t bits = 0;
    bool used = false;
    std::string text;
  };
  std::array<Entry, 32> entries;
};

std::string doubleText(double v) {
  NumberTexts* texts = PerThread<NumberTexts>::get();
  if (texts == nullptr) return formatDouble(v);  // the thread is exiting
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  NumberTexts::Entry& e = texts->entries[(bits * 0x9E3779B97F4A7C15ull) >> 59];
  if (!e.used || e.bits != bits) {
    e.text = formatDouble(v);
    e.bits = bits;
    e.used = true;
  }
  return e.text;
}

// Text of a non-tensor argument; empty for values that are not recorded.
[[gnu::noinline]] std::string scalarText(const c10::IValue& v) {
  if (v.isNone()) return "None";
  if (v.isBool()) return v.toBool() ? "True" : "False";
  if (v.isInt()) return std::to_string(v.toInt());
  if (v.isDouble()) return doubleText(v.toDouble());
  if (v.isString()) return "\"" + v.toStringRef() + "\"";
  if (v.isScalar()) {
    const at::Scalar s = v.toScalar();
    if (s.isIntegral(false)) return std::to_string(s.toLong());
    if (s.isBoolean()) return s.toBool() ? "True" : "False";
    return doubleText(s.toDouble());
  }
  if (v.isDevice()) return v.toDevice().str();
  if (v.isIntList()) {
    std::string out = "[";
    for (int64_t i : v.toIntVector()) out += (out.size() > 1 ? ", " : "") + std::to_string(i);
    return out + "]";
  }
  if (v.isDoubleList()) {
    std::string out = "[";
    for (double d : v.toDoubleVector()) out += (out.size() > 1 ? ", " : "") + doubleText(d);
    return out + "]";
  }
  if (v.isBoolList()) {
    std::string out = "[";
    for (bool b : v.toBoolList()) out += std::string(out.size() > 1 ? ", " : "") + (b ? "True" : "False");
    return out + "]";
  }
  return "";
}

// Contents on a longer chain of deltas are recorded as they are: a reader
// reads every link of a chain to get a value back (analyzer/read/recording.cpp).
// Measured on resnet18 + AdamW, 4 steps at level 2 (bench/README.md,
// "Level-2 bytes"): chains of at most 1, 3 and 7 links wrote 6%, 10% and
// 12% less than no deltas, and compare took about 0%, 12% and 25% longer
// (before readers took lately restored values from memory).
constexpr uint8_t kMaxDeltaDepth = 3;

// An input the op writes, at the op's start: its values, for its output's
// delta. Only contiguous references are copied (no op runs, no guard).
[[gnu::noinline]] void keepDeltaBase(const at::Tensor& t, const ContentStore::Content& content,
                                     CapturedOp& record) {
  if (content.delta_depth >= kMaxDeltaDepth) return;
  DeltaBase base;
  base.impl = t.unsafeGetTensorImpl();
  base.content = content.id;
  base.depth = content.delta_depth;
  if (content.ref) {
    if (!t.is_contiguous()) return;
    base.bytes = DataBuffer(t.data_ptr(), t.nbytes());
  } else {
    base.tensor = record.tensors.size() - 1;
  }
  record.delta_bases.push_back(std::move(base));
}

// Out-of-place ops whose output is a function of their first input's
// elements alone, given a number argument (derivedPrediction).
bool derivesFromInput0(std::string_view op) {
  return op == "aten::sqrt" || op == "aten::div" || op == "aten::mul";
}

// The first input of such an op, for its output's delta (format v9): where
// it lies, read when the output is captured.
[[gnu::noinline]] void keepDerivedBase(const at::Tensor& t, const ContentStore::Content& content,
                                       CapturedOp& record) {
  if (content.delta_depth >= kMaxDeltaDepth || !t.is_contiguous()) return;
  DeltaBase base;
  base.content = content.id;
  base.depth = content.delta_depth;
  base.input = static_cast<const char*>(t.data_ptr());
  base.input_bytes = t.nbytes();
  record.delta_bases.push_back(std::move(base));
}

// What an op computed from its delta's base (format v9, format/delta_map.h):
// `mul_` by a decay and `add_` of an epsilon change every mantissa bit of
// what they overwrote, so the plain XOR is about as large as the values,
// while the XOR with the op done again is zero wherever its kernel rounds
// as IEEE does. None: a plain XOR.
struct Prediction {
  format::DeltaMap map = format::DeltaMap::None;
  double scalar = 0;
};

// Argument `position` of the op as a number: a Scalar's text, or a 0-dim
// tensor (Python's numbers reach `mul_` and `add_` as wrapped 0-dim tensors)
// whose statistics this record holds.
bool numberArgument(const CapturedOp& record, uint32_t position, double& out) {
  for (const format::Scalar& s : record.scalars) {
    if (s.position != position) continue;
    const char* end = s.value.data() + s.value.size();
    return std::from_chars(s.value.data(), end, out).ptr == end;
  }
  for (const format::Tensor& t : record.tensors) {
    if (t.role != format::Role::Input || t.position != position) continue;
    if (!t.shape.empty() || !t.has_stats || t.content_ref || t.stats.nan_count != 0 || t.stats.inf_count != 0 ||
        t.stats.min != t.stats.max) {
      return false;
    }
    out = t.stats.min;
    return true;
  }
  return false;
}

Prediction defined(Prediction p, format::Dtype dtype) {
  return format::deltaMapDefined(p.map, dtype, p.scalar) ? p : Prediction{};
}

// An in-place op's output from what it overwrote.
Prediction inPlacePrediction(const CapturedOp& record, format::Dtype dtype) {
  Prediction p;
  double alpha = 1;
  if (record.op == "aten::mul_" && numberArgument(record, 1, p.scalar)) {
    p.map = format::DeltaMap::Multiply;
  } else if (record.op == "aten::add_" && numberArgument(record, 1, p.scalar) && numberArgument(record, 2, alpha) &&
             alpha == 1) {
    p.map = format::DeltaMap::Add;
  }
  return defined(p, dtype);
}

// An out-of-place op's output from its first input (derivesFromInput0):
// an optimizer's sqrt of its second moment, divided by a bias correction.
Prediction derivedPrediction(const CapturedOp& record, format::Dtype dtype) {
  Prediction p;
  if (record.op == "aten::sqrt") {
    p.map = format::DeltaMap::Sqrt;
  } else if (record.op == "aten::mul" && numberArgument(record, 1, p.scalar)) {
    p.map = format::DeltaMap::Multiply;
  } else if (record.op == "aten::div" && numberArgument(record, 1, p.scalar)) {
    bool rounding = false;  // div's rounding_mode: "trunc" or "floor" is not a division
    for (const format::Scalar& s : record.scalars) rounding = rounding || (s.position == 2 && s.value != "None");
    if (!rounding) p.map = format::DeltaMap::Divide;
  }
  return defined(p, dtype);
}

// Whether `values` XOR the prediction from `base` holds more zero bytes
// than `values`, on kProbes words spread over them: zstd keeps little of a
// run of zeros. A small update (a parameter's step) zeroes the sign and
// exponent bytes, a predicted one (a decay) the whole value; a fill
// (zero_) or unrelated values (copy_) would not gain.
bool deltaPays(std::string_view values, std::string_view base, const Prediction& p, format::Dtype dtype) {
  constexpr size_t kProbes = 1024;
  const size_t words = values.size() / 8;
  if (words == 0) return false;
  const size_t step = std::max<size_t>(1, words / kProbes);
  uint64_t v[kProbes], b[kProbes];
  size_t n = 0;
  for (size_t w = 0; w < words && n < kProbes; w += step, ++n) {
    std::memcpy(&v[n], values.data() + w * 8, 8);
    std::memcpy(&b[n], base.data() + w * 8, 8);
  }
  format::xorMapped(reinterpret_cast<const char*>(b), reinterpret_cast<const char*>(v), reinterpret_cast<char*>(b),
                    n * 8, dtype, p.map, p.scalar);
  int64_t gain = 0;
  for (size_t i = 0; i < n; ++i) {
    for (int k = 0; k < 8; ++k) {
      gain += int64_t(((b[i] >> (8 * k)) & 0xff) == 0) - int64_t(((v[i] >> (8 * k)) & 0xff) == 0);
    }
  }
  return gain > 0;
}

// `out`, the record's last content, becomes the link after `base`'s.
void linkDelta(format::Tensor& out, DeltaBase& base, const Prediction& p, ContentStore& contents,
               CapturedOp& record) {
  out.delta_base = base.content;
  out.delta_map = p.map;
  out.delta_scalar = p.scalar;
  record.contents.back().delta_depth = static_cast<uint8_t>(base.depth + 1);
  contents.countDelta(p.map != format::DeltaMap::None);
  base.content = 0;  // used
}

// What an input of the same tensor held at the op's start, not yet used
// for a delta; null when none.
DeltaBase* unusedBaseOf(const at::Tensor& t, CapturedOp& record) {
  for (DeltaBase& base : record.delta_bases) {
    if (base.impl == t.unsafeGetTensorImpl() && base.content != 0) return &base;
  }
  return nullptr;
}

// The first input of an out-of-place op that `out`, its first output, is
// computed from (keepDerivedBase), when its memory is not the output's.
DeltaBase* derivedBaseOf(const at::Tensor& t, const format::Tensor& out, CapturedOp& record) {
  if (out.position != 0) return nullptr;
  const char* begin = static_cast<const char*>(t.data_ptr());
  const char* end = begin + t.nbytes();
  for (DeltaBase& base : record.delta_bases) {
    if (base.input == nullptr || base.content == 0) continue;
    if (begin < base.input + base.input_bytes && base.input < end) return nullptr;  // overlapping
    return &base;
  }
  return nullptr;
}

// `bytes`, the record's last tensor's, held apart in acc's memory
// (data_buffer.h), not in the tensor's `data`.
void holdApart(DataBuffer bytes, format::Tensor& out, CapturedOp& record) {
  out.data_size = bytes.size();
  out.has_data = true;
  out.data_apart = true;
  record.bytes.push_back({record.tensors.size() - 1, std::move(bytes)});
}

// An output defined here whose tensor an input held at the op's start:
// its bytes become the XOR of the two, and its content a link of a chain.
[[gnu::noinline]] void recordAsDelta(const at::Tensor& t, format::Tensor& out, ContentStore& contents,
                                     CapturedOp& record) {
  if (record.bytes.empty() || record.bytes.back().tensor != record.tensors.size() - 1) return;
  DataBuffer& values = record.bytes.back().bytes;
  DeltaBase* base = unusedBaseOf(t, record);
  std::string_view bytes;
  Prediction p;
  if (base != nullptr) {
    const DataBuffer* held = base->tensor == SIZE_MAX ? &base->bytes : record.bytesOf(base->tensor);
    if (held == nullptr) return;
    bytes = held->view();
    p = inPlacePrediction(record, out.dtype);
  } else {
    base = derivedBaseOf(t, out, record);
    if (base == nullptr) return;
    bytes = std::string_view(base->input, base->input_bytes);
    p = derivedPrediction(record, out.dtype);
    if (p.map == format::DeltaMap::None) return;
  }
  if (bytes.size() != values.size() || !deltaPays(values.view(), bytes, p, out.dtype)) return;
  format::xorMapped(bytes.data(), values.data(), values.data(), bytes.size(), out.dtype, p.map, p.scalar);
  linkDelta(out, *base, p, contents, record);
}

// The delta of an output whose tensor an input held at the op's start, in
// the block that holds the input's copy (keepDeltaBase): the output is read
// once and never copied. False where that copy is not there (the input's
// bytes are this record's own, recordAsDelta's case) or the delta does not
// pay: the output is then captured whole.
[[gnu::noinline]] bool captureAsDelta(const at::Tensor& t, format::Tensor& out, ContentStore& contents,
                                      CapturedOp& record) {
  if (!t.is_contiguous() || !readable(t)) return false;
  DeltaBase* base = unusedBaseOf(t, record);
  if (base == nullptr) return false;
  const std::string_view values(static_cast<const char*>(t.data_ptr()), t.nbytes());
  const Prediction p = inPlacePrediction(record, out.dtype);
  if (base->tensor != SIZE_MAX || base->bytes.size() != values.size() ||
      !deltaPays(values, base->bytes.view(), p, out.dtype)) {
    return false;
  }
  format::xorMapped(base->bytes.data(), values.data(), base->bytes.data(), values.size(), out.dtype, p.map, p.scalar);
  holdApart(std::move(base->bytes), out, record);
  linkDelta(out, *base, p, contents, record);
  return true;
}

// Level 2 on the CPU: the bytes of `t`, the record's last tensor.
[[gnu::noinline]] void captureBytesApart(const at::Tensor& t, CapturedOp& record) {
  if (!t.device().is_cpu() || !readable(t)) return;
  at::Tensor host = t.contiguous();  // itself when contiguous: no op, no autograd
  holdApart(DataBuffer(host.data_ptr(), host.nbytes()), record.tensors.back(), record);
}

}  // namespace

bool outputsUninitialized(std::string_view op) {
  static constexpr std::string_view kOps[] = {"aten::empty", "aten::empty_like", "aten::empty_strided",
                                              "aten::new_empty", "aten::new_empty_strided"};
  for (std::string_view name : kOps) {
    if (op == name) return true;
  }
  return false;
}

uint32_t versionOf(const at::Tensor& t) {
  const c10::TensorImpl& impl = *t.unsafeGetTensorImpl();
  if (compat::versionCounterIdentity(impl) == nullptr) return kNoVersion;
  return impl.version_counter().current_version();
}

bool readable(const at::Tensor& t) {
  if (t.layout() != at::kStrided || dtypeOf(t.scalar_type()) == format::Dtype::Unknown || t.is_quantized() ||
      t.is_meta()) {
    return false;
  }
  // Tensors without memory of their own: torch.compile's fake tensors and
  // other Python subclasses (while it traces a model, the dispatcher shows
  // their ops too), and functionalization's wrappers.
  const c10::TensorImpl& impl = *t.unsafeGetTensorImpl();
  if (impl.is_python_dispatch() || !t.has_storage()) return false;
  // The storage read where it lies: storage() copies its handle (two atomic
  // updates of its count).
  return t.numel() == 0 || impl.unsafe_storage().data() != nullptr;
}

std::string deviceName(c10::Device d) {
  std::string name;
  assignDeviceName(name, d);
  return name;
}

format::Tensor captureTensor(const at::Tensor& t, format::Role role, uint32_t position,
                             uint32_t item, int level) {
  format::Tensor out;
  captureTensorInto(out, t, role, position, item, level);
  return out;
}

format::Tensor& captureWhole(const at::Tensor& t, const format::Tensor& like, CapturedOp& r) {
  r.tensors.push_back(captureTensor(t, like.role, like.position, like.item, 1));
  if (t.device().is_cpu()) {
    captureBytesApart(t, r);
  } else {
    captureOnDevice(t, 2, r.tensors.size() - 1, r, /*batch=*/nullptr);
  }
  return r.tensors.back();
}

void captureTensorInto(format::Tensor& out, const at::Tensor& t, format::Role role, uint32_t position,
                       uint32_t item, int level) {
  out.role = role;
  out.position = position;
  out.item = item;
  out.dtype = dtypeOf(t.scalar_type());
  assignDeviceName(out.device, t.device());
  out.shape.assign(t.sizes().begin(), t.sizes().end());
  bool strided = t.layout() == at::kStrided;
  if (strided) out.strides.assign(t.strides().begin(), t.strides().end());
  // Sparse, quantized and unknown element types keep their metadata only;
  // device tensors get their values from captureOnDevice(). (Not asked at
  // level 0, where every tensor keeps only its metadata.)
  const bool here = level >= 1 && t.device().is_cpu() && readable(t);
  if (here) {
    out.stats = tensorStats(t);
    out.has_stats = true;
  }
  if (level >= 2 && here) {
    at::Tensor host = t.contiguous();  // itself when contiguous: no op, no autograd
    out.data.assign(static_cast<const char*>(host.data_ptr()), host.nbytes());
    out.has_data = true;
  }
}

void captureValue(const c10::IValue& value, format::Role role, uint32_t position, const Capture& capture,
                  CapturedOp& record) {
  auto add = [&](const at::Tensor& t, uint32_t item) {
    if (!t.defined()) return;
    const bool garbage = capture.uninitialized && capture.uninitialized(t);
    const int level = garbage ? 0 : capture.level;
    const bool values = level >= 1 && readable(t);
    ContentStore::Content content;
    if (values && capture.contents != nullptr) {
      content = capture.contents->identify(t, record.contents, record.batch != nullptr ? &record.batch->clock : nullptr);
    }
    // Statistics read in place need no guard; level 2 then copies the same
    // contiguous memory (t.contiguous() is t itself). A device tensor that
    // only joins a batch runs no op either (a batch it fills takes its own
    // guard, and so does a filled output's constantStats where it runs an
    // op): on torch 1.13 and 2.x each guard copies and rebuilds the thread's
    // callback list twice, about a microsecond per record.
    const bool only_batched = capture.batch != nullptr && level < 2 && !t.device().is_cpu();
    // Level 2 copies a strided view by contiguous(), an op. (Asked last:
    // at level 0 no tensor needs the guard.)
    if (values && !content.ref && !capture.guard.held() && !only_batched &&
        !(statsReadInPlace(t) && (level < 2 || t.is_contiguous()))) {
      capture.guard.need();
    }
    // A content an earlier record (or tensor) holds: metadata and its id.
    format::Tensor& out = record_pool::appendTensor(record);
    const int own = content.ref ? 0 : level;
    // An output its op filled with one value (zero_grad's zero_ on torch
    // 1.13, ones_like): statistics known without reading it, as on a device.
    std::optional<format::Stats> known;
    if (own >= 1 && values && capture.constant) {
      known = constantStats(*capture.constant, t.scalar_type(), statsElements(t));
    }
    captureTensorInto(out, t, role, position, item, known ? 0 : std::min(own, 1));
    if (known) {
      out.stats = *known;
      out.has_stats = true;
    }
    // Level 2 on the CPU: an in-place op's output recorded as a delta on
    // what the same tensor held at the op's start (format v8).
    const bool delta_output = own >= 2 && values && content.id != 0 && t.device().is_cpu() &&
                              role == format::Role::Output && !record.delta_bases.empty();
    const bool delta_done = delta_output && captureAsDelta(t, out, *capture.contents, record);
    if (own >= 2 && !delta_done) captureBytesApart(t, record);
    out.uninitialized = garbage;
    out.content = content.id;
    if (level >= 2 && values && content.id != 0 && t.device().is_cpu()) {
      if (role == format::Role::Input && capture.writes != nullptr && capture.writes->writes(position)) {
        keepDeltaBase(t, content, record);
      } else if (role == format::Role::Input && position == 0 && capture.writes != nullptr &&
                 capture.writes->known && derivesFromInput0(record.op)) {
        keepDerivedBase(t, content, record);
      } else if (delta_output && !delta_done) {
        recordAsDelta(t, out, *capture.contents, record);
      }
    }
    if (content.ref) {
      out.content_ref = true;
      out.has_stats = true;
      out.has_data = level >= 2;
    } else if (values && !t.device().is_cpu()) {
      if (!known || level >= 2) captureOnDevice(t, level, record.tensors.size() - 1, record, capture.batch, !known);
    }
    if (capture.devices) capture.devices(t.device());
    if (capture.hold != nullptr) {
      capture.hold->tensors.push_back(t);
      capture.hold->versions.push_back(versionOf(t));
    }
  };
  if (value.isTensor()) {
    add(value.toTensor(), 0);
  } else if (value.isList() && value.isTensorList()) {  // isList() inline: most values are numbers
    uint32_t item = 0;
    // Read where they lie: toTensorVector() would copy the list.
    for (const c10::IValue& element : value.toListRef()) add(element.toTensor(), item++);
    // An empty list leaves no tensor behind: say so, for replay.
    if (item == 0 && role == format::Role::Input) record.scalars.push_back({position, "[]"});
  } else if (value.isList() && !value.isIntList() && !value.isDoubleList() && !value.isBoolList()) {
    uint32_t item = 0;
    for (const c10::IValue& element : value.toListRef()) {
      if (element.isTensor()) add(element.toTensor(), item);
      ++item;
    }
  } else if (role == format::Role::Input) {
    std::string text = scalarText(value);
    if (!text.empty()) record.scalars.push_back({position, std::move(text)});
  }
}

}  // namespace acc::recorder
