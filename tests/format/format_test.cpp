// The record encoding (format/record.h, format/bytes.h) and the framed file
// layout (format/frame.h), including recovery from truncation and corruption.
#include <gtest/gtest.h>
#include <cstdint>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "format/bytes.h"
#include "format/frame.h"
#include "format/record.h"
#include "format/record_sink.h"

#include "tests/temp_dir.h"

namespace acc::format {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- helpers

bool sameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expectSameStats(const Stats& a, const Stats& b) {
  EXPECT_TRUE(sameBits(a.min, b.min)) << a.min << " vs " << b.min;
  EXPECT_TRUE(sameBits(a.max, b.max)) << a.max << " vs " << b.max;
  EXPECT_TRUE(sameBits(a.mean, b.mean)) << a.mean << " vs " << b.mean;
  EXPECT_TRUE(sameBits(a.norm, b.norm)) << a.norm << " vs " << b.norm;
  EXPECT_EQ(a.nan_count, b.nan_count);
  EXPECT_EQ(a.inf_count, b.inf_count);
  EXPECT_EQ(a.checksum, b.checksum);
}

// `b` was decoded from `a`'s encoding: its bytes are in the data stream, so
// only their size comes back.
void expectSameTensor(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.role, b.role);
  EXPECT_EQ(a.position, b.position);
  EXPECT_EQ(a.item, b.item);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.strides, b.strides);
  EXPECT_EQ(a.has_stats, b.has_stats);
  if (a.has_stats && b.has_stats) expectSameStats(a.stats, b.stats);
  EXPECT_EQ(a.uninitialized, b.uninitialized);
  EXPECT_EQ(a.has_data, b.has_data);
  EXPECT_EQ(b.data_size, a.has_data ? a.data.size() : 0u);
  EXPECT_TRUE(b.data.empty());
}

void expectSameOp(const OpRecord& a, const OpRecord& b) {
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.pass, b.pass);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.op_number, b.op_number);
  EXPECT_EQ(a.depth, b.depth);
  EXPECT_EQ(a.thread, b.thread);
  EXPECT_EQ(a.stack_id, b.stack_id);
  EXPECT_EQ(a.grad_fn, b.grad_fn);
  EXPECT_EQ(a.forward_name, b.forward_name);
  EXPECT_EQ(a.sequence_nr, b.sequence_nr);
  EXPECT_EQ(a.start_ns, b.start_ns);
  EXPECT_EQ(a.end_ns, b.end_ns);
  ASSERT_EQ(a.scalars.size(), b.scalars.size());
  for (size_t i = 0; i < a.scalars.size(); ++i) {
    EXPECT_EQ(a.scalars[i].position, b.scalars[i].position);
    EXPECT_EQ(a.scalars[i].value, b.scalars[i].value);
  }
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    SCOPED_TRACE("tensor " + std::to_string(i));
    expectSameTensor(a.tensors[i], b.tensors[i]);
  }
}

std::string bytesOf(const void* p, size_t n) { return std::string(static_cast<const char*>(p), n); }

OpRecord sampleOp() {
  OpRecord r;
  r.index = 300;  // multi-byte varint
  r.name = "aten::linear.5.bwd.2";
  r.op = "AddmmBackward0";
  r.pass = Pass::Backward;
  r.step = -2;
  r.op_number = 5;
  r.depth = 1;
  r.thread = 140234567890123ULL;
  r.stack_id = 42;
  r.grad_fn = "AddmmBackward0";
  r.forward_name = "aten::linear.5.fwd";
  r.sequence_nr = 1234;
  r.start_ns = 1700000000000000000ULL;
  r.end_ns = 1700000000000012345ULL;
  r.scalars = {{1, "0.5"}, {3, "\"mean\""}, {4, "[1, 2]"}, {7, "None"}};

  Tensor in;
  in.role = Role::Input;
  in.position = 0;
  in.dtype = Dtype::Float32;
  in.device = "cpu";
  in.shape = {2, 3};
  in.strides = {3, 1};
  in.has_stats = true;
  in.stats = {-1.5, 2.25, 0.125, 3.5, 0, 1, 0xDEADBEEFCAFEF00DULL};
  in.has_data = true;
  const float values[6] = {-1.5f, 0.f, 1.f, 2.25f, -0.f, 1e-30f};
  in.data = bytesOf(values, sizeof values);

  Tensor out;
  out.role = Role::Output;
  out.position = 0;
  out.dtype = Dtype::BFloat16;
  out.device = "cuda:1";
  out.shape = {4, 0, 7};
  out.strides = {7, 7, 1};
  out.uninitialized = true;

  Tensor list_item;
  list_item.role = Role::GradIn;
  list_item.position = 2;
  list_item.item = 3;
  list_item.dtype = Dtype::Int64;
  list_item.device = "cpu";
  list_item.shape = {3};
  list_item.strides = {-1};  // negative strides survive zigzag encoding
  list_item.has_stats = true;
  list_item.stats.min = std::numeric_limits<double>::quiet_NaN();
  list_item.stats.max = std::numeric_limits<double>::infinity();
  list_item.stats.nan_count = 1000;
  list_item.has_data = true;
  const int64_t ints[3] = {INT64_MIN, 0, INT64_MAX};
  list_item.data = bytesOf(ints, sizeof ints);

  Tensor grad_out;
  grad_out.role = Role::GradOut;
  grad_out.position = 1;
  grad_out.dtype = Dtype::Bool;
  grad_out.device = "cpu";
  grad_out.shape = {};  // a scalar tensor
  grad_out.has_data = true;
  grad_out.data = std::string("\x01", 1);

  r.tensors = {in, out, list_item, grad_out};
  return r;
}

// The body of the single record in `encoded`.
std::string_view onlyBody(const std::string& encoded, RecordKind expected) {
  RecordCursor cursor(encoded);
  RecordKind kind;
  std::string_view body;
  EXPECT_TRUE(cursor.next(kind, body));
  EXPECT_EQ(kind, expected);
  RecordKind unused;
  std::string_view rest;
  EXPECT_FALSE(cursor.next(unused, rest));
  return body;
}

// ---------------------------------------------------------------- records

TEST(RecordTest, OpRoundTrip) {
  OpRecord original = sampleOp();
  std::string encoded;
  encode(original, encoded);
  OpRecord decoded = decodeOp(onlyBody(encoded, RecordKind::Op));
  expectSameOp(original, decoded);
}

TEST(RecordTest, DefaultOpRoundTrip) {
  OpRecord original;
  std::string encoded;
  encode(original, encoded);
  expectSameOp(original, decodeOp(onlyBody(encoded, RecordKind::Op)));
}

// The encoder writes a record's fixed fields and each tensor's into room
// reserved at once (FieldCursor): every field at its widest (10-byte
// varints, 64 dimensions of INT64_MIN, long strings, a mapped delta) must
// fit what it reserved, into a scratch buffer that starts empty, and read
// back whole. (Writing past the room would corrupt the heap silently; this
// is the record that would.)
TEST(RecordTest, WidestFieldsFitTheRoomReservedForThem) {
  OpRecord r;
  r.index = UINT64_MAX;
  r.name = std::string(1000, 'n');
  r.op = std::string(300, 'o');
  r.pass = Pass::Backward;
  r.step = INT64_MIN;
  r.op_number = UINT64_MAX;
  r.depth = UINT32_MAX;
  r.thread = UINT64_MAX;
  r.stack_id = UINT64_MAX;
  r.grad_fn = std::string(200, 'g');
  r.forward_name = std::string(500, 'f');
  r.sequence_nr = INT64_MIN;
  r.start_ns = UINT64_MAX;
  r.end_ns = UINT64_MAX - 1;
  r.scalars = {{UINT32_MAX, std::string(400, 's')}};
  for (int i = 0; i < 3; ++i) {
    Tensor t;
    t.role = Role::GradOut;
    t.position = UINT32_MAX;
    t.item = UINT32_MAX;
    t.dtype = Dtype::Float32;
    t.device = std::string(700, 'd');
    t.shape.assign(64, INT64_MIN);
    t.strides.assign(64, INT64_MAX);
    t.has_stats = true;
    t.stats = {-1e308, 1e308, 0.5, 1e300, UINT64_MAX, UINT64_MAX, UINT64_MAX};
    t.has_data = true;
    t.data = "abcd";
    t.uninitialized = true;
    t.content = UINT64_MAX;
    t.delta_base = UINT64_MAX - 1;
    t.delta_map = DeltaMap::Multiply;
    t.delta_scalar = 0.9;
    r.tensors.push_back(t);
  }
  r.has_overload = true;
  r.overload = std::string(100, 'v');
  std::string encoded, scratch;
  encode(r, encoded, scratch);
  const OpRecord back = decodeOp(onlyBody(encoded, RecordKind::Op));
  expectSameOp(r, back);
  ASSERT_EQ(back.tensors.size(), 3u);
  EXPECT_EQ(back.tensors[2].content, UINT64_MAX);
  EXPECT_EQ(back.tensors[2].delta_base, UINT64_MAX - 1);
  EXPECT_EQ(back.tensors[2].delta_map, DeltaMap::Multiply);
  EXPECT_EQ(back.overload, r.overload);
  // The same record again through the scratch it grew: the same bytes.
  std::string again;
  encode(r, again, scratch);
  EXPECT_EQ(again, encoded);
}

TEST(RecordTest, DataGoesAfterTheRecordInTensorOrder) {
  OpRecord original = sampleOp();
  std::string item;
  encode(original, item);
  const size_t record_size = item.size();
  appendData(original, item);
  std::string_view record, data;
  splitRecord(item, record, data);
  EXPECT_EQ(record.size(), record_size);
  std::string expected;
  for (const Tensor& t : original.tensors) {
    if (t.has_data) expected += t.data;
  }
  EXPECT_EQ(std::string(data), expected);
  EXPECT_EQ(decodeOp(onlyBody(std::string(record), RecordKind::Op)).dataSize(), expected.size());
  EXPECT_THROW(splitRecord(item.substr(0, 3), record, data), FormatError);
}

// The writer wraps a record with where its bytes start in the data stream;
// each tensor's bytes follow the previous tensor's.
TEST(RecordTest, DataOffsetWrapperGivesEachTensorItsOffset) {
  OpRecord original = sampleOp();
  std::string encoded, wrapped;
  encode(original, encoded);
  wrapWithDataOffset(encoded, 1000, wrapped);
  RecordCursor cursor(wrapped);
  RecordKind kind;
  std::string_view body;
  ASSERT_TRUE(cursor.next(kind, body));
  EXPECT_EQ(kind, RecordKind::Op);
  EXPECT_EQ(cursor.dataOffset(), 1000u);
  OpRecord decoded = decodeOp(body, true, cursor.dataOffset());
  expectSameOp(original, decoded);
  uint64_t next = 1000;
  for (const Tensor& t : decoded.tensors) {
    if (!t.has_data) continue;
    EXPECT_EQ(t.data_offset, next);
    next += t.data_size;
  }
  EXPECT_EQ(next, 1000 + decoded.dataSize());
  std::string stack;
  encode(StackRecord{}, stack);
  EXPECT_THROW(wrapWithDataOffset(stack, 0, wrapped), FormatError);
}

TEST(RecordTest, StackRoundTrip) {
  StackRecord original;
  original.id = 987654321;
  original.frames = {{FrameKind::Python, "train.py:42 forward"},
                     {FrameKind::Native, "libtorch_cpu.so+0x1234abc at::native::add"},
                     {FrameKind::Python, ""}};
  std::string encoded;
  encode(original, encoded);
  StackRecord decoded = decodeStack(onlyBody(encoded, RecordKind::Stack));
  EXPECT_EQ(decoded.id, original.id);
  ASSERT_EQ(decoded.frames.size(), original.frames.size());
  for (size_t i = 0; i < original.frames.size(); ++i) {
    EXPECT_EQ(decoded.frames[i].kind, original.frames[i].kind);
    EXPECT_EQ(decoded.frames[i].text, original.frames[i].text);
  }
}

TEST(RecordTest, CursorWalksConcatenatedRecordsInOrder) {
  std::string payload;
  StackRecord stack;
  stack.id = 1;
  stack.frames = {{FrameKind::Python, "a.py:1 f"}};
  encode(stack, payload);
  OpRecord a = sampleOp();
  a.index = 7;
  encode(a, payload);
  OpRecord b;
  b.index = 8;
  b.name = "aten::relu.9.fwd";
  encode(b, payload);

  RecordCursor cursor(payload);
  RecordKind kind;
  std::string_view body;
  ASSERT_TRUE(cursor.next(kind, body));
  EXPECT_EQ(kind, RecordKind::Stack);
  EXPECT_EQ(decodeStack(body).frames.at(0).text, "a.py:1 f");
  ASSERT_TRUE(cursor.next(kind, body));
  EXPECT_EQ(kind, RecordKind::Op);
  EXPECT_EQ(decodeOp(body).index, 7u);
  ASSERT_TRUE(cursor.next(kind, body));
  EXPECT_EQ(kind, RecordKind::Op);
  EXPECT_EQ(decodeOp(body).name, "aten::relu.9.fwd");
  EXPECT_FALSE(cursor.next(kind, body));
}

TEST(RecordTest, CursorThrowsOnTruncatedPayload) {
  std::string payload;
  encode(sampleOp(), payload);
  std::string cut = payload.substr(0, payload.size() - 3);
  RecordCursor cursor(cut);
  RecordKind kind;
  std::string_view body;
  EXPECT_THROW(cursor.next(kind, body), FormatError);
}

TEST(RecordTest, CursorThrowsOnEmptyRecord) {
  std::string payload(1, '\0');  // length 0
  RecordCursor cursor(payload);
  RecordKind kind;
  std::string_view body;
  EXPECT_THROW(cursor.next(kind, body), FormatError);
}

TEST(RecordTest, EveryTruncationOfAnOpBodyThrows) {
  std::string encoded;
  encode(sampleOp(), encoded);
  std::string body(onlyBody(encoded, RecordKind::Op));
  ASSERT_GT(body.size(), 10u);
  for (size_t len = 0; len < body.size(); ++len) {
    EXPECT_THROW(decodeOp(std::string_view(body.data(), len)), FormatError) << "length " << len;
    EXPECT_THROW(decodeOp(std::string_view(body.data(), len), false), FormatError)
        << "length " << len;
  }
}

TEST(RecordTest, TrailingBytesAfterAnOpThrow) {
  std::string encoded;
  encode(sampleOp(), encoded);
  std::string body(onlyBody(encoded, RecordKind::Op));
  body.push_back('\0');
  EXPECT_THROW(decodeOp(body), FormatError);
}

// Format 3: the overload name in the record's tail, read back; older
// records (no tail) read as before; unknown tail flags and bytes after the
// tail are errors.
TEST(RecordTest, OverloadTailRoundTrips) {
  OpRecord op = sampleOp();
  op.has_overload = true;
  op.overload = "Tensor";
  std::string encoded;
  encode(op, encoded);
  std::string body(onlyBody(encoded, RecordKind::Op));
  OpRecord back = decodeOp(body);
  EXPECT_TRUE(back.has_overload);
  EXPECT_EQ(back.overload, "Tensor");
  op.overload = "";  // the default overload is a name too
  encoded.clear();
  encode(op, encoded);
  back = decodeOp(std::string(onlyBody(encoded, RecordKind::Op)));
  EXPECT_TRUE(back.has_overload);
  EXPECT_EQ(back.overload, "");
  std::string old_style;
  encode(sampleOp(), old_style);
  EXPECT_FALSE(decodeOp(std::string(onlyBody(old_style, RecordKind::Op))).has_overload);
  std::string bad(onlyBody(old_style, RecordKind::Op));
  bad.push_back('\x02');  // tail flag 2: unknown
  EXPECT_THROW(decodeOp(bad), FormatError);
  std::string after = body;
  after.push_back('\0');
  EXPECT_THROW(decodeOp(after), FormatError);
}

TEST(RecordTest, UnknownPassOrRoleThrows) {
  OpRecord op;
  op.pass = static_cast<Pass>(2);
  std::string encoded;
  encode(op, encoded);
  EXPECT_THROW(decodeOp(onlyBody(encoded, RecordKind::Op)), FormatError);

  OpRecord with_tensor;
  with_tensor.tensors.resize(1);
  with_tensor.tensors[0].role = static_cast<Role>(9);
  encoded.clear();
  encode(with_tensor, encoded);
  EXPECT_THROW(decodeOp(onlyBody(encoded, RecordKind::Op)), FormatError);
}

// ---------------------------------------------------------------- bytes

TEST(BytesTest, VarintEdgeValuesRoundTripWithExpectedLengths) {
  const std::vector<std::pair<uint64_t, size_t>> cases = {
      {0, 1}, {1, 1}, {127, 1}, {128, 2}, {16383, 2}, {16384, 3},
      {uint64_t{1} << 63, 10}, {UINT64_MAX, 10}};
  for (const auto& [value, length] : cases) {
    std::string buf;
    ByteWriter w(buf);
    w.varint(value);
    w.finish();
    EXPECT_EQ(buf.size(), length) << value;
    ByteReader r(buf);
    EXPECT_EQ(r.varint(), value);
    EXPECT_TRUE(r.done());
  }
}

TEST(BytesTest, VarintKnownEncodings) {
  std::string buf;
  ByteWriter w(buf);
  w.varint(127);
  w.varint(128);
  w.varint(300);
  EXPECT_EQ(w.view(), std::string_view("\x7f\x80\x01\xac\x02", 5));
  w.finish();
  EXPECT_EQ(buf, std::string("\x7f\x80\x01\xac\x02", 5));
}

TEST(BytesTest, ZigzagEdgeValuesRoundTrip) {
  const std::vector<std::pair<int64_t, uint64_t>> cases = {
      {0, 0}, {-1, 1}, {1, 2}, {-64, 127}, {64, 128},
      {INT64_MAX, UINT64_MAX - 1}, {INT64_MIN, UINT64_MAX}};
  for (const auto& [value, encoded] : cases) {
    std::string buf;
    ByteWriter w(buf);
    w.zigzag(value);
    w.finish();
    ByteReader raw(buf);
    EXPECT_EQ(raw.varint(), encoded) << value;
    ByteReader r(buf);
    EXPECT_EQ(r.zigzag(), value);
    EXPECT_TRUE(r.done());
  }
}

// The writer appends after what the string held, and a scratch buffer
// written from offset 0 keeps its size (view() is what was written).
TEST(BytesTest, WriterAppendsAndOverwritesScratch) {
  std::string out = "ab";
  ByteWriter w(out);
  w.str(std::string(300, 'x'));  // grows the string past one step
  w.finish();
  ASSERT_EQ(out.size(), 2u + 2u + 300u);
  EXPECT_EQ(out.substr(0, 2), "ab");
  EXPECT_EQ(out.substr(4), std::string(300, 'x'));

  std::string scratch(1000, 'z');
  ByteWriter s(scratch, 0);
  s.varint(5);
  EXPECT_EQ(s.view(), std::string_view("\x05", 1));
  EXPECT_EQ(scratch.size(), 1000u);  // not trimmed
}

TEST(BytesTest, MixedFieldsRoundTrip) {
  std::string buf;
  ByteWriter w(buf);
  w.u8(0xff);
  w.f64(-0.0);
  w.u64(UINT64_MAX);
  w.str("hello");
  w.str("");
  w.zigzag(INT64_MIN);
  w.finish();
  EXPECT_EQ(w.size(), buf.size());
  ByteReader r(buf);
  EXPECT_EQ(r.u8(), 0xff);
  double z = r.f64();
  EXPECT_TRUE(sameBits(z, -0.0));
  EXPECT_EQ(r.u64(), UINT64_MAX);
  EXPECT_EQ(r.str(), "hello");
  EXPECT_EQ(r.str(), "");
  EXPECT_EQ(r.zigzag(), INT64_MIN);
  EXPECT_TRUE(r.done());
  EXPECT_THROW(r.u8(), FormatError);
}

// Fields written through a FieldCursor, into room reserved at once, are
// the bytes ByteWriter writes field by field.
TEST(BytesTest, FieldCursorWritesWhatByteWriterWrites) {
  const auto fields = [](auto& w) {
    for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{300}, uint64_t{16383},
                       uint64_t{16384}, uint64_t{1} << 63, UINT64_MAX}) {
      w.varint(v);
    }
    for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1}, int64_t{-64}, int64_t{64}, INT64_MIN, INT64_MAX}) {
      w.zigzag(v);
    }
    w.str("device");
    w.u8(7);
    w.f64(-0.0);
    w.u64(0x0102030405060708ULL);
  };
  std::string expected;
  ByteWriter plain(expected);
  fields(plain);
  plain.finish();

  std::string out = "ab";
  ByteWriter w(out);
  FieldCursor c{w.reserve(expected.size())};
  fields(c);
  w.commit(c.p);
  EXPECT_EQ(w.size(), 2 + expected.size());
  w.varint(5);  // the writer goes on after what the cursor wrote
  w.finish();
  EXPECT_EQ(out, "ab" + expected + "\x05");
}

TEST(BytesTest, ReaderRejectsOverlongAndShortInput) {
  std::string overlong(11, '\x80');
  ByteReader r1(overlong);
  EXPECT_THROW(r1.varint(), FormatError);

  std::string unterminated("\x80\x80", 2);
  ByteReader r2(unterminated);
  EXPECT_THROW(r2.varint(), FormatError);

  std::string short_str("\x05" "abc", 4);
  ByteReader r3(short_str);
  EXPECT_THROW(r3.str(), FormatError);

  std::string short_f64(7, '\0');
  ByteReader r4(short_f64);
  EXPECT_THROW(r4.f64(), FormatError);
}

// ---------------------------------------------------------------- dtypes

TEST(DtypeTest, NamesSizesAndLookupAgree) {
  const std::vector<std::tuple<Dtype, const char*, size_t>> table = {
      {Dtype::Unknown, "unknown", 0},    {Dtype::Bool, "bool", 1},
      {Dtype::UInt8, "uint8", 1},        {Dtype::Int8, "int8", 1},
      {Dtype::Int16, "int16", 2},        {Dtype::Int32, "int32", 4},
      {Dtype::Int64, "int64", 8},        {Dtype::Float16, "float16", 2},
      {Dtype::BFloat16, "bfloat16", 2},  {Dtype::Float32, "float32", 4},
      {Dtype::Float64, "float64", 8},    {Dtype::Complex64, "complex64", 8},
      {Dtype::Complex128, "complex128", 16}};
  for (const auto& [dtype, name, size] : table) {
    EXPECT_STREQ(dtypeName(dtype), name);
    EXPECT_EQ(dtypeSize(dtype), size) << name;
    EXPECT_EQ(dtypeFromName(name), dtype) << name;
    EXPECT_EQ(dtypeFromName(dtypeName(dtype)), dtype) << name;
  }
  EXPECT_EQ(dtypeFromName("float128"), Dtype::Unknown);
  EXPECT_EQ(dtypeFromName(""), Dtype::Unknown);
  EXPECT_STREQ(dtypeName(static_cast<Dtype>(200)), "unknown");
  EXPECT_EQ(dtypeSize(static_cast<Dtype>(200)), 0u);
}

TEST(DtypeTest, RoleAndPassNames) {
  EXPECT_STREQ(roleName(Role::Input), "input");
  EXPECT_STREQ(roleName(Role::Output), "output");
  EXPECT_STREQ(roleName(Role::GradIn), "grad_in");
  EXPECT_STREQ(roleName(Role::GradOut), "grad_out");
  EXPECT_STREQ(passName(Pass::Forward), "fwd");
  EXPECT_STREQ(passName(Pass::Backward), "bwd");
}

TEST(RecordTest, TensorNumel) {
  Tensor t;
  EXPECT_EQ(t.numel(), 1u);  // scalar
  t.shape = {2, 3, 4};
  EXPECT_EQ(t.numel(), 24u);
  t.shape = {5, 0};
  EXPECT_EQ(t.numel(), 0u);
}

// ---------------------------------------------------------------- frames

class FrameFileTest : public ::testing::Test {
 protected:
  // Distinct, compressible payloads that never contain the frame magic.
  static std::string payload(int i) {
    std::string p;
    for (int line = 0; line < 200; ++line) {
      p += "frame " + std::to_string(i) + " line " + std::to_string(line) + " value " +
           std::to_string(line * 7919 % 1000 + i) + "\n";
    }
    return p;
  }

  // Writes the file header and `count` frames; remembers each frame's bytes.
  void writeFile(int count, std::string header = fileHeader()) {
    FrameEncoder encoder(3);
    std::string file = std::move(header);
    frames_.clear();
    payloads_.clear();
    for (int i = 0; i < count; ++i) {
      payloads_.push_back(payload(i));
      std::string frame;
      encoder.encode(payloads_.back(), frame);
      frames_.push_back(frame);
      file += frame;
    }
    writeBytes(file);
  }

  void writeBytes(const std::string& bytes) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(out.good());
  }

  std::string readBytes() const {
    std::ifstream in(path_, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // Offset of frame `i` in the file.
  size_t frameOffset(size_t i) const {
    size_t off = kFileHeaderSize;
    for (size_t k = 0; k < i; ++k) off += frames_[k].size();
    return off;
  }

  // The payloads read equal those written with the given indices.
  void expectPayloads(const std::vector<std::string>& got, const std::vector<size_t>& written) {
    ASSERT_EQ(got.size(), written.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(got[i] == payloads_[written[i]]) << "frame " << i << " should be payload "
                                                   << written[i];
    }
  }

  std::vector<std::string> readAll(FrameReader& reader) {
    std::vector<std::string> out;
    std::string p;
    while (reader.next(p)) out.push_back(p);
    return out;
  }

  test::TempDir tmp_{"acc_format_test"};
  fs::path dir_{tmp_.path()};
  std::string path_ = (dir_ / "rank0.accrec").string();
  std::vector<std::string> frames_;
  std::vector<std::string> payloads_;
};

TEST_F(FrameFileTest, HeaderLayout) {
  std::string h = fileHeader();
  ASSERT_EQ(h.size(), kFileHeaderSize);
  EXPECT_EQ(h.substr(0, 8), std::string(kFileMagic, 8));
  uint16_t version;
  std::memcpy(&version, h.data() + 8, 2);
  EXPECT_EQ(version, kFormatVersion);
}

TEST_F(FrameFileTest, FrameLayout) {
  FrameEncoder encoder(1);
  std::string frame;
  std::string p = payload(0);
  encoder.encode(p, frame);
  ASSERT_GT(frame.size(), kFrameHeaderSize);
  uint32_t magic, csize, usize;
  std::memcpy(&magic, frame.data(), 4);
  std::memcpy(&csize, frame.data() + 4, 4);
  std::memcpy(&usize, frame.data() + 8, 4);
  EXPECT_EQ(magic, kFrameMagic);
  EXPECT_EQ(csize, frame.size() - kFrameHeaderSize);
  EXPECT_EQ(usize, p.size());
  EXPECT_LT(csize, usize);  // the payload is compressible
}

TEST_F(FrameFileTest, AllFramesReadBack) {
  writeFile(5);
  FrameReader reader(path_);
  EXPECT_EQ(reader.version(), kFormatVersion);
  expectPayloads(readAll(reader), {0, 1, 2, 3, 4});
  EXPECT_EQ(reader.framesRead(), 5u);
  EXPECT_EQ(reader.corruptFrames(), 0u);
  EXPECT_EQ(reader.truncatedBytes(), 0u);
  std::string p;
  EXPECT_FALSE(reader.next(p));  // stays at the end
}

TEST_F(FrameFileTest, EmptyPayloadFrameReadsBack) {
  FrameEncoder encoder(1);
  std::string frame;
  encoder.encode("", frame);
  writeBytes(fileHeader() + frame);
  FrameReader reader(path_);
  std::string p = "not cleared";
  ASSERT_TRUE(reader.next(p));
  EXPECT_EQ(p, "");
  EXPECT_FALSE(reader.next(p));
}

TEST_F(FrameFileTest, HeaderOnlyFileHasNoFrames) {
  writeFile(0);
  FrameReader reader(path_);
  std::string p;
  EXPECT_FALSE(reader.next(p));
  EXPECT_EQ(reader.framesRead(), 0u);
  EXPECT_EQ(reader.truncatedBytes(), 0u);
}

TEST_F(FrameFileTest, TruncatedLastFrameKeepsEarlierFrames) {
  writeFile(4);
  std::string bytes = readBytes();
  size_t last = frameOffset(3);
  size_t kept = frames_[3].size() / 2;
  ASSERT_GT(kept, kFrameHeaderSize);
  writeBytes(bytes.substr(0, last + kept));

  FrameReader reader(path_);
  std::vector<std::string> got = readAll(reader);
  expectPayloads(got, {0, 1, 2});
  EXPECT_EQ(reader.corruptFrames(), 0u);
  EXPECT_GT(reader.truncatedBytes(), 0u);
  EXPECT_EQ(reader.truncatedBytes(), kept);
}

TEST_F(FrameFileTest, TruncatedInsideFrameHeader) {
  writeFile(3);
  std::string bytes = readBytes();
  writeBytes(bytes.substr(0, frameOffset(2) + 5));
  FrameReader reader(path_);
  EXPECT_EQ(readAll(reader).size(), 2u);
  EXPECT_EQ(reader.truncatedBytes(), 5u);
  EXPECT_EQ(reader.corruptFrames(), 0u);
}

TEST_F(FrameFileTest, CorruptMiddleFrameIsSkippedAndLaterFramesRead) {
  writeFile(5);
  std::string bytes = readBytes();
  size_t data_start = frameOffset(2) + kFrameHeaderSize;
  size_t data_size = frames_[2].size() - kFrameHeaderSize;
  ASSERT_GT(data_size, 16u);
  for (size_t i = data_size / 2; i < data_size / 2 + 4; ++i) bytes[data_start + i] ^= 0x5a;
  writeBytes(bytes);

  FrameReader reader(path_);
  std::vector<std::string> got = readAll(reader);
  EXPECT_EQ(reader.corruptFrames(), 1u);
  EXPECT_EQ(reader.truncatedBytes(), 0u);
  EXPECT_EQ(reader.framesRead(), 4u);
  expectPayloads(got, {0, 1, 3, 4});
}

TEST_F(FrameFileTest, CorruptFrameMagicIsSkippedAndLaterFramesRead) {
  writeFile(3);
  std::string bytes = readBytes();
  bytes[frameOffset(1)] ^= 0xff;
  writeBytes(bytes);

  FrameReader reader(path_);
  std::vector<std::string> got = readAll(reader);
  EXPECT_EQ(reader.corruptFrames(), 1u);
  expectPayloads(got, {0, 2});
}

// BUG (format/frame.cpp, FrameReader::next): a middle frame whose
// compressed-size field points past the end of the file is reported as a
// truncated tail (truncatedBytes() > 0, corruptFrames() == 0) and every
// intact frame after it is lost, instead of being counted as corrupt and
// skipped by resynchronising. Enable once fixed.
TEST_F(FrameFileTest, CorruptSizeFieldOfMiddleFrameIsSkipped) {
  writeFile(3);
  std::string bytes = readBytes();
  bytes[frameOffset(1) + 7] = 0x01;  // high byte of the compressed size: +16 MiB
  writeBytes(bytes);

  FrameReader reader(path_);
  std::vector<std::string> got = readAll(reader);
  EXPECT_EQ(reader.corruptFrames(), 1u);
  EXPECT_EQ(reader.truncatedBytes(), 0u);
  expectPayloads(got, {0, 2});
}

TEST_F(FrameFileTest, WrongFileHeaderThrows) {
  writeFile(1);
  std::string bytes = readBytes();
  bytes[0] = 'X';
  writeBytes(bytes);
  EXPECT_THROW(FrameReader reader(path_), FormatError);
}

TEST_F(FrameFileTest, ShortFileThrows) {
  writeBytes("ACCREC");
  EXPECT_THROW(FrameReader reader(path_), FormatError);
}

TEST_F(FrameFileTest, MissingFileThrowsWithPath) {
  std::string missing = (dir_ / "missing.accrec").string();
  try {
    FrameReader reader(missing);
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
}

TEST_F(FrameFileTest, NewerVersionThrows) {
  std::string header = fileHeader();
  uint16_t newer = kFormatVersion + 1;
  std::memcpy(header.data() + 8, &newer, 2);
  writeFile(1, header);
  try {
    FrameReader reader(path_);
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }
}

TEST_F(FrameFileTest, RecordsSurviveFileRoundTrip) {
  std::string payload;
  std::vector<OpRecord> ops;
  for (uint64_t i = 0; i < 50; ++i) {
    OpRecord op = sampleOp();
    op.index = i;
    op.name = "aten::add." + std::to_string(i) + ".fwd";
    encode(op, payload);
    ops.push_back(op);
  }
  FrameEncoder encoder(1);
  std::string frame;
  encoder.encode(payload, frame);
  writeBytes(fileHeader() + frame);

  FrameReader reader(path_);
  std::string got;
  ASSERT_TRUE(reader.next(got));
  RecordCursor cursor(got);
  RecordKind kind;
  std::string_view body;
  size_t n = 0;
  while (cursor.next(kind, body)) {
    ASSERT_EQ(kind, RecordKind::Op);
    ASSERT_LT(n, ops.size());
    expectSameOp(ops[n], decodeOp(body));
    ++n;
  }
  EXPECT_EQ(n, ops.size());
}

TEST_F(FrameFileTest, DataFramesAreSkippedAndReadOnDemand) {
  FrameEncoder encoder(1);
  std::string file = fileHeader(), frame;
  const std::string stream = "0123456789abcdefghij";  // frames: [0,8) [8,14) then a gap, [16,20)
  encoder.encodeData(stream.substr(0, 8), 0, frame);
  file += frame;
  encoder.encode(payload(0), frame);
  file += frame;
  encoder.encodeData(stream.substr(8, 6), 8, frame);
  file += frame;
  encoder.encodeData(stream.substr(16, 4), 16, frame);
  file += frame;
  encoder.encode(payload(1), frame);
  file += frame;
  writeBytes(file);

  FrameReader reader(path_);
  std::string got;
  ASSERT_TRUE(reader.next(got));
  EXPECT_EQ(got, payload(0));
  std::string out(20, '?');
  EXPECT_TRUE(reader.readData(2, 5, out.data()));
  EXPECT_EQ(out.substr(0, 5), "23456");
  EXPECT_FALSE(reader.readData(6, 4, out.data()));  // [8,14) not reached yet
  ASSERT_TRUE(reader.next(got));
  EXPECT_EQ(got, payload(1));
  EXPECT_FALSE(reader.next(got));
  EXPECT_EQ(reader.framesRead(), 2u);
  EXPECT_EQ(reader.dataFramesSeen(), 3u);
  EXPECT_TRUE(reader.readData(0, 14, out.data()));  // whole frames and a slice
  EXPECT_EQ(out.substr(0, 14), stream.substr(0, 14));
  EXPECT_TRUE(reader.readData(17, 3, out.data()));
  EXPECT_EQ(out.substr(0, 3), "hij");
  EXPECT_FALSE(reader.readData(12, 6, out.data()));  // [14,16) was never written
  EXPECT_FALSE(reader.readData(18, 4, out.data()));  // past the end
  EXPECT_TRUE(reader.readData(100, 0, out.data()));  // nothing asked
  EXPECT_EQ(reader.corruptFrames() + reader.corruptDataFrames() + reader.truncatedBytes(), 0u);
}

// v7 writes data frames byte-shuffled; they read back as the same stream,
// whole or in slices, beside unshuffled (v2..v6) ones, and whatever the
// payload's size modulo 4.
TEST_F(FrameFileTest, ShuffledDataFramesReadBackAsTheStream) {
  std::string stream;
  for (int i = 0; i < 4099; ++i) stream.push_back(static_cast<char>((i * 37 + i / 7) & 0xff));
  FrameEncoder encoder(1);
  std::string file = fileHeader(), frame;
  encoder.encodeData(std::string_view(stream).substr(0, 1001), 0, frame);  // shuffled, a 1-byte tail
  EXPECT_EQ(frame.substr(0, 4), "ACCS");
  file += frame;
  encoder.encodeData(std::string_view(stream).substr(1001, 1000), 1001, frame, /*shuffle=*/false);
  EXPECT_EQ(frame.substr(0, 4), "ACCD");
  file += frame;
  encoder.encodeData(std::string_view(stream).substr(2001), 2001, frame);
  file += frame;
  encoder.encode(payload(0), frame);
  file += frame;
  writeBytes(file);
  FrameReader reader(path_);
  std::string got;
  ASSERT_TRUE(reader.next(got));
  std::string out(stream.size(), '?');
  ASSERT_TRUE(reader.readData(0, stream.size(), out.data()));
  EXPECT_EQ(out, stream);
  ASSERT_TRUE(reader.readData(998, 7, out.data()));
  EXPECT_EQ(out.substr(0, 7), stream.substr(998, 7));
  EXPECT_EQ(reader.corruptFrames() + reader.corruptDataFrames(), 0u);
  std::string shuffled(10, '?'), back(10, '?');
  byteShuffle4("abcdefghij", 10, shuffled.data());
  EXPECT_EQ(shuffled, "aebfcgdhij");
  byteUnshuffle4(shuffled.data(), 10, back.data());
  EXPECT_EQ(back, "abcdefghij");
}

TEST_F(FrameFileTest, DataFrameMagicInVersionOneFileIsCorruption) {
  std::string header = fileHeader();
  header[8] = 1;  // format version 1 had no data frames
  FrameEncoder encoder(1);
  std::string frame, file = header;
  encoder.encodeData("abcd", 0, frame);
  file += frame;
  encoder.encode(payload(0), frame);
  file += frame;
  writeBytes(file);
  FrameReader reader(path_);
  std::string got;
  ASSERT_TRUE(reader.next(got));
  EXPECT_EQ(got, payload(0));
  EXPECT_EQ(reader.corruptFrames(), 1u);
  EXPECT_EQ(reader.dataFramesSeen(), 0u);
}

// Float32 bytes with a trained weight's spread: normal values of about 0.05.
std::string normalFloats(size_t count, uint32_t seed) {
  std::string out(count * 4, '\0');
  uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
  auto uniform = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(state >> 11) + 0.5) / 9007199254740992.0;
  };
  for (size_t i = 0; i < count; ++i) {
    const float v = static_cast<float>(0.05 * std::sqrt(-2 * std::log(uniform())) * std::cos(6.283185307 * uniform()));
    std::memcpy(out.data() + 4 * i, &v, 4);
  }
  return out;
}

// zstd's negative levels store literals as they are unless told otherwise,
// and a shuffled float's sign-and-exponent bytes are literals: Huffman-coded,
// they take about a third of their size (format/frame.cpp).
TEST_F(FrameFileTest, FastDataFramesCodeTheirLiterals) {
  const std::string floats = normalFloats(1 << 18, 1);
  std::string frame;
  for (int level : {-100, -1}) {
    FrameEncoder(level).encodeData(floats, 0, frame);
    EXPECT_LT(frame.size(), 0.85 * floats.size()) << "level " << level;
  }
}

// RecordSink's data frames compressed on helper threads are the frames one
// thread writes, in the same order, before the record frames that refer to
// them; written through DirectFile (level 2), the file is the same too.
TEST_F(FrameFileTest, DataFramesCompressedOnSeveralThreadsMakeTheSameFile) {
  std::vector<std::string> items;
  std::string stream;
  for (int i = 0; i < 60; ++i) {
    OpRecord r;
    r.index = static_cast<uint64_t>(i);
    r.name = "aten::mul." + std::to_string(i);
    Tensor t;
    t.role = Role::Output;
    t.dtype = Dtype::Float32;
    const size_t count = static_cast<size_t>(i % 7) * 3000 + static_cast<size_t>(i % 3);  // 0 to 72 KB
    t.shape = {static_cast<int64_t>(count)};
    t.strides = {1};
    t.has_data = true;
    t.data = normalFloats(count, static_cast<uint32_t>(i));
    stream += t.data;
    r.tensors = {t};
    items.emplace_back();
    encode(r, items.back());
    appendData(r, items.back());
  }
  auto write = [&](int threads, bool direct) {
    const std::string path = (dir_ / ("threads" + std::to_string(threads) + (direct ? "direct" : ""))).string();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT_GE(fd, 0);
    const std::string header = fileHeader();
    EXPECT_EQ(::write(fd, header.data(), header.size()), static_cast<ssize_t>(header.size()));
    RecordSink sink(fd, 1, -100, 16 << 10, threads);
    if (direct) sink.writeDirect(header);
    uint64_t records = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      sink.add(items[i]);
      if (i % 13 == 12) records += sink.flush().records;  // record frames among the data frames
    }
    const RecordSink::Flushed last = sink.flush();
    EXPECT_TRUE(last.ok) << sink.error();
    EXPECT_EQ(records + last.records, items.size());
    EXPECT_GT(sink.frames(), 60u);
    ::close(fd);
    return path;
  };
  const std::string one = write(1, false), four = write(4, false), direct = write(4, true);
  path_ = one;
  const std::string one_bytes = readBytes();
  path_ = four;
  const std::string four_bytes = readBytes();
  path_ = direct;
  const std::string direct_bytes = readBytes();
  EXPECT_EQ(one_bytes.size(), four_bytes.size());
  EXPECT_TRUE(one_bytes == four_bytes);
  EXPECT_EQ(one_bytes.size(), direct_bytes.size());
  EXPECT_TRUE(one_bytes == direct_bytes);

  FrameReader reader(four);
  std::string payload;
  while (reader.next(payload)) {
  }
  std::string back(stream.size(), '?');
  ASSERT_TRUE(reader.readData(0, stream.size(), back.data()));
  EXPECT_TRUE(back == stream);
  EXPECT_EQ(reader.corruptFrames() + reader.corruptDataFrames() + reader.truncatedBytes(), 0u);
}

}  // namespace
}  // namespace acc::format
