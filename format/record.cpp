#include "format/record.h"

#include <cstdint>
#include <cstring>
#include <array>

#include "format/bytes.h"
#include "format/delta_map.h"

namespace acc::format {
namespace {

struct DtypeInfo {
  const char* name;
  size_t size;
};
constexpr std::array<DtypeInfo, 13> kDtypes = {{
    {"unknown", 0}, {"bool", 1}, {"uint8", 1}, {"int8", 1}, {"int16", 2},
    {"int32", 4}, {"int64", 8}, {"float16", 2}, {"bfloat16", 2}, {"float32", 4},
    {"float64", 8}, {"complex64", 8}, {"complex128", 16},
}};

const DtypeInfo& info(Dtype d) {
  auto i = static_cast<size_t>(d);
  return kDtypes[i < kDtypes.size() ? i : 0];
}


// Tensor flags. v1 writes kHasData alone, with the bytes inline; v2 adds
// kDataInStream and writes only their size, and kUninitialized; v4 adds
// kContent (a content id follows the flags) and kContentRef (with kContent:
// neither statistics nor data size follow, kHasStats and kHasData say what
// the content holds); v8 adds kDeltaBase (with kContent and data in the
// stream: the id of the content the bytes are XOR'ed with follows the id);
// v9 adds kDeltaMap (with kDeltaBase: the map of the base's values and its
// scalar follow the base).
constexpr uint8_t kHasStats = 1, kHasData = 2, kDataInStream = 4, kUninitialized = 8, kContent = 16,
                  kContentRef = 32, kDeltaBase = 64, kDeltaMap = 128;
constexpr uint8_t kKnownFlags =
    kHasStats | kHasData | kDataInStream | kUninitialized | kContent | kContentRef | kDeltaBase | kDeltaMap;

// v3: an op record may end with a tail: flags saying which fields follow.
constexpr uint64_t kTailOverload = 1;
constexpr uint64_t kTailModule = 2;    // v5
constexpr uint64_t kTailAutocast = 4;  // v6
constexpr uint64_t kKnownTail = kTailOverload | kTailModule | kTailAutocast;

// Statistics through either writer: 4 doubles, 2 varints, 1 word.
constexpr size_t kStatsBound = 4 * 8 + 2 * kMaxVarint + 8;
template <typename W>
void writeStats(const Stats& s, W& w) {
  w.f64(s.min);
  w.f64(s.max);
  w.f64(s.mean);
  w.f64(s.norm);
  w.varint(s.nan_count);
  w.varint(s.inf_count);
  w.u64(s.checksum);
}

// A tensor's fields, in room reserved at once for all of them.
void encodeTensor(const Tensor& t, ByteWriter& writer) {
  // role, dtype, flags and the delta map's kind (4 bytes); position, item,
  // the two dimension counts, content, delta base, data size (7 varints);
  // the delta's scalar; the device's name; the dimensions.
  const size_t bound = 4 + 7 * kMaxVarint + 8 + kStatsBound + (kMaxVarint + t.device.size()) +
                       kMaxVarint * (t.shape.size() + t.strides.size());
  FieldCursor w{writer.reserve(bound)};
  w.u8(static_cast<uint8_t>(t.role));
  w.varint(t.position);
  w.varint(t.item);
  w.u8(static_cast<uint8_t>(t.dtype));
  w.str(t.device);
  w.varint(t.shape.size());
  for (int64_t d : t.shape) w.zigzag(d);
  w.varint(t.strides.size());
  for (int64_t s : t.strides) w.zigzag(s);
  const bool ref = t.content != 0 && t.content_ref;
  const bool delta = t.content != 0 && !ref && t.has_data && t.delta_base != 0;
  const bool mapped = delta && t.delta_map != DeltaMap::None;
  w.u8(static_cast<uint8_t>((t.has_stats ? kHasStats : 0) | (t.has_data ? kHasData | kDataInStream : 0) |
                            (t.uninitialized ? kUninitialized : 0) | (t.content != 0 ? kContent : 0) |
                            (ref ? kContentRef : 0) | (delta ? kDeltaBase : 0) | (mapped ? kDeltaMap : 0)));
  if (t.content != 0) w.varint(t.content);
  if (delta) w.varint(t.delta_base);
  if (mapped) {
    w.u8(static_cast<uint8_t>(t.delta_map));
    w.f64(t.delta_scalar);
  }
  if (!ref) {
    if (t.has_stats) writeStats(t.stats, w);
    if (t.has_data) w.varint(t.data_apart ? t.data_size : t.data.size());
  }
  writer.commit(w.p);
}

Tensor decodeTensor(ByteReader& r, bool with_data, uint64_t& data_offset) {
  Tensor t;
  uint8_t role = r.u8();
  if (role > static_cast<uint8_t>(Role::GradOut)) throw FormatError("unknown tensor role");
  t.role = static_cast<Role>(role);
  t.position = static_cast<uint32_t>(r.varint());
  t.item = static_cast<uint32_t>(r.varint());
  t.dtype = static_cast<Dtype>(r.u8());
  t.device = r.str();
  uint64_t ndim = r.varint();
  if (ndim > 64) throw FormatError("tensor has more than 64 dimensions");
  for (uint64_t i = 0; i < ndim; ++i) t.shape.push_back(r.zigzag());
  uint64_t nstrides = r.varint();
  if (nstrides > 64) throw FormatError("tensor has more than 64 strides");
  for (uint64_t i = 0; i < nstrides; ++i) t.strides.push_back(r.zigzag());
  uint8_t flags = r.u8();
  if (flags & ~kKnownFlags) throw FormatError("unknown tensor flags");
  t.has_stats = (flags & kHasStats) != 0;
  t.uninitialized = (flags & kUninitialized) != 0;
  t.has_data = (flags & kHasData) != 0;
  if (flags & kContent) {
    t.content = r.varint();
    if (t.content == 0) throw FormatError("tensor content id 0");
  }
  if (flags & kDeltaBase) {
    if ((flags & (kContent | kContentRef | kHasData | kDataInStream)) != (kContent | kHasData | kDataInStream)) {
      throw FormatError("delta base without a content of its own in the data stream");
    }
    t.delta_base = r.varint();
    // Contents are numbered in order: a base is always an earlier one (no cycles).
    if (t.delta_base == 0 || t.delta_base >= t.content) throw FormatError("delta base is not an earlier content");
  }
  if (flags & kDeltaMap) {
    if (!(flags & kDeltaBase)) throw FormatError("delta map without a delta base");
    t.delta_map = static_cast<DeltaMap>(r.u8());
    t.delta_scalar = r.f64();
    if (t.delta_map == DeltaMap::None || !deltaMapDefined(t.delta_map, t.dtype, t.delta_scalar)) {
      throw FormatError("delta map not defined on the tensor's dtype");
    }
  }
  if (flags & kContentRef) {
    if (!(flags & kContent)) throw FormatError("content reference without a content id");
    // Its statistics and bytes are the content's: resolved by the reader.
    t.content_ref = true;
    t.data_in_stream = t.has_data;
    return t;
  }
  if (t.has_stats) t.stats = decodeStats(r);
  if (t.has_data && (flags & kDataInStream)) {
    t.data_in_stream = true;
    t.data_size = r.varint();
    t.data_offset = data_offset;
    data_offset += t.data_size;
  } else if (t.has_data) {
    std::string_view bytes = r.view(r.varint());
    t.data_size = bytes.size();
    if (with_data) t.data.assign(bytes);
  }
  return t;
}

void frameRecord(RecordKind kind, std::string_view body, std::string& out) {
  // `out` grows once, to exactly the record's size.
  char head[kMaxVarint + 1];
  size_t n = putVarint(head, body.size() + 1);
  head[n++] = static_cast<char>(kind);
  out.reserve(out.size() + n + body.size());
  out.append(head, n).append(body);
}

}  // namespace

void encodeStats(const Stats& s, ByteWriter& w) {
  FieldCursor c{w.reserve(kStatsBound)};
  writeStats(s, c);
  w.commit(c.p);
}

Stats decodeStats(ByteReader& r) {
  Stats s;
  s.min = r.f64();
  s.max = r.f64();
  s.mean = r.f64();
  s.norm = r.f64();
  s.nan_count = r.varint();
  s.inf_count = r.varint();
  s.checksum = r.u64();
  return s;
}

const char* dtypeName(Dtype d) { return info(d).name; }
size_t dtypeSize(Dtype d) { return info(d).size; }
Dtype dtypeFromName(std::string_view name) {
  for (size_t i = 0; i < kDtypes.size(); ++i) {
    if (name == kDtypes[i].name) return static_cast<Dtype>(i);
  }
  return Dtype::Unknown;
}

const char* roleName(Role r) {
  switch (r) {
    case Role::Input: return "input";
    case Role::Output: return "output";
    case Role::GradIn: return "grad_in";
    case Role::GradOut: return "grad_out";
  }
  return "?";
}

const char* passName(Pass p) { return p == Pass::Forward ? "fwd" : "bwd"; }

uint64_t OpRecord::dataSize() const {
  uint64_t n = 0;
  for (const Tensor& t : tensors) n += t.has_data ? t.data_size : 0;
  return n;
}

uint64_t Tensor::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d < 0 ? 0 : d);
  return n;
}

void encode(const OpRecord& r, std::string& out) {
  // Built in a buffer of the thread's own, never trimmed: the recorder
  // encodes one record per op.
  thread_local std::string body;
  encode(r, out, body);
}

void encode(const OpRecord& r, std::string& out, std::string& body) {
  ByteWriter w(body, 0);
  {
    // The fields before the tensors, in room reserved at once: 10 varints,
    // the pass, 4 strings with their lengths.
    const size_t bound = 1 + 10 * kMaxVarint + 4 * kMaxVarint + r.name.size() + r.op.size() +
                         r.grad_fn.size() + r.forward_name.size();
    FieldCursor c{w.reserve(bound)};
    c.varint(r.index);
    c.str(r.name);
    c.str(r.op);
    c.u8(static_cast<uint8_t>(r.pass));
    c.zigzag(r.step);
    c.varint(r.op_number);
    c.varint(r.depth);
    c.varint(r.thread);
    c.varint(r.stack_id);
    c.str(r.grad_fn);
    c.str(r.forward_name);
    c.zigzag(r.sequence_nr);
    c.varint(r.start_ns);
    c.varint(r.end_ns);
    c.varint(r.scalars.size());
    w.commit(c.p);
  }
  for (const Scalar& s : r.scalars) {
    w.varint(s.position);
    w.str(s.value);
  }
  w.varint(r.tensors.size());
  for (const Tensor& t : r.tensors) encodeTensor(t, w);
  // v3 tail: what older records lack (they end after their tensors).
  const uint64_t tail = (r.has_overload ? kTailOverload : 0) | (r.has_module ? kTailModule : 0) |
                        (r.has_autocast ? kTailAutocast : 0);
  if (tail != 0) {
    w.varint(tail);
    if (r.has_overload) w.str(r.overload);
    if (r.has_module) w.str(r.module);
    if (r.has_autocast) w.str(r.autocast);
  }
  frameRecord(RecordKind::Op, w.view(), out);
}

void appendData(const OpRecord& r, std::string& out) {
  size_t size = out.size();
  for (const Tensor& t : r.tensors) {
    if (t.has_data && !t.content_ref) size += t.data.size();
  }
  out.reserve(size);
  for (const Tensor& t : r.tensors) {
    if (t.has_data && !t.content_ref) out.append(t.data);
  }
}

void splitRecord(std::string_view item, std::string_view& record, std::string_view& data) {
  ByteReader r(item);
  uint64_t len = r.varint();
  size_t header = item.size() - r.remaining();
  if (len == 0 || len > r.remaining()) throw FormatError("item does not start with a whole record");
  record = item.substr(0, header + len);
  data = item.substr(header + len);
}

void wrapWithDataOffset(std::string_view record, uint64_t data_offset, std::string& out) {
  ByteReader r(record);
  uint64_t len = r.varint();
  std::string_view inner = r.view(len);
  if (len == 0 || static_cast<RecordKind>(inner[0]) != RecordKind::Op) throw FormatError("not an op record");
  std::string body;
  ByteWriter w(body);
  w.varint(data_offset);
  w.raw(inner.data() + 1, inner.size() - 1);
  w.finish();
  frameRecord(RecordKind::DataOp, body, out);
}

void encode(const StackRecord& r, std::string& out) {
  std::string body;
  ByteWriter w(body);
  w.varint(r.id);
  w.varint(r.frames.size());
  for (const StackFrame& f : r.frames) {
    w.u8(static_cast<uint8_t>(f.kind));
    w.str(f.text);
  }
  w.finish();
  frameRecord(RecordKind::Stack, body, out);
}

bool RecordCursor::next(RecordKind& kind, std::string_view& body) {
  if (rest_.empty()) return false;
  ByteReader r(rest_);
  uint64_t len = r.varint();
  if (len == 0) throw FormatError("empty record");
  std::string_view record = r.view(len);
  rest_ = rest_.substr(rest_.size() - r.remaining());
  kind = static_cast<RecordKind>(static_cast<uint8_t>(record[0]));
  body = record.substr(1);
  data_offset_ = 0;
  if (kind == RecordKind::DataOp) {
    ByteReader inner(body);
    data_offset_ = inner.varint();
    body = body.substr(body.size() - inner.remaining());
    kind = RecordKind::Op;
  }
  return true;
}

OpRecord decodeOp(std::string_view body, bool with_data, uint64_t data_offset) {
  ByteReader r(body);
  OpRecord o;
  o.index = r.varint();
  o.name = r.str();
  o.op = r.str();
  uint8_t pass = r.u8();
  if (pass > 1) throw FormatError("unknown pass");
  o.pass = static_cast<Pass>(pass);
  o.step = r.zigzag();
  o.op_number = r.varint();
  o.depth = static_cast<uint32_t>(r.varint());
  o.thread = r.varint();
  o.stack_id = r.varint();
  o.grad_fn = r.str();
  o.forward_name = r.str();
  o.sequence_nr = r.zigzag();
  o.start_ns = r.varint();
  o.end_ns = r.varint();
  uint64_t nscalars = r.varint();
  for (uint64_t i = 0; i < nscalars; ++i) {
    Scalar s;
    s.position = static_cast<uint32_t>(r.varint());
    s.value = r.str();
    o.scalars.push_back(std::move(s));
  }
  uint64_t ntensors = r.varint();
  for (uint64_t i = 0; i < ntensors; ++i) o.tensors.push_back(decodeTensor(r, with_data, data_offset));
  if (!r.done()) {
    uint64_t tail = r.varint();
    if (tail == 0 || (tail & ~kKnownTail)) throw FormatError("unknown op record tail flags");
    o.has_overload = (tail & kTailOverload) != 0;
    if (o.has_overload) o.overload = r.str();
    o.has_module = (tail & kTailModule) != 0;
    if (o.has_module) o.module = r.str();
    o.has_autocast = (tail & kTailAutocast) != 0;
    if (o.has_autocast) o.autocast = r.str();
  }
  if (!r.done()) throw FormatError("op record has trailing bytes");
  return o;
}

StackRecord decodeStack(std::string_view body) {
  ByteReader r(body);
  StackRecord s;
  s.id = r.varint();
  uint64_t n = r.varint();
  for (uint64_t i = 0; i < n; ++i) {
    StackFrame f;
    f.kind = static_cast<FrameKind>(r.u8());
    f.text = r.str();
    s.frames.push_back(std::move(f));
  }
  return s;
}

}  // namespace acc::format
