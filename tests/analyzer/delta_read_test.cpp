// Format v8 deltas read back as values: a tensor whose bytes were recorded
// XOR'ed with an earlier content's (what an in-place op overwrote) gets its
// values back whether the base is in the same record, in an earlier one, or
// at the end of a chain; a reference to such a content too, with or without
// its data loaded at first; and a base that cannot be read costs the
// tensor its data (counted), never wrong values.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "analyzer/read/recording.h"
#include "format/frame.h"
#include "format/record.h"
#include "format/record_sink.h"
#include "format/bytes.h"
#include "format/delta_map.h"

namespace acc::analyzer {
namespace {

namespace fs = std::filesystem;

std::string values(uint32_t seed) {
  std::string bytes(4096, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 31 + seed * 17) & 0xff);
  return bytes;
}

// 1024 float32s, some negative.
std::string floats(float scale) {
  std::vector<float> v(1024);
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * (static_cast<float>(i % 97) - 20.5f) / 7.0f;
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// Each float of `bytes` through f.
template <typename F>
std::string eachFloat(const std::string& bytes, F f) {
  std::string out = bytes;
  for (size_t i = 0; i + 4 <= out.size(); i += 4) {
    float x;
    std::memcpy(&x, out.data() + i, 4);
    x = f(x);
    std::memcpy(out.data() + i, &x, 4);
  }
  return out;
}

// Format v9: `values` stored as their XOR with map(base).
std::string mappedXor(const std::string& values, const std::string& base, format::DeltaMap map, double scalar) {
  std::string out(values.size(), '\0');
  format::xorMapped(base.data(), values.data(), out.data(), values.size(), format::Dtype::Float32, map, scalar);
  return out;
}

std::string xorOf(const std::string& a, const std::string& b) {
  std::string out = a;
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(out[i] ^ b[i]);
  return out;
}

format::Tensor defining(uint64_t id, std::string data, uint64_t base = 0) {
  format::Tensor t;
  t.role = format::Role::Output;
  t.dtype = format::Dtype::Float32;
  t.device = "cpu";
  t.shape = {1024};
  t.strides = {1};
  t.content = id;
  t.delta_base = base;
  t.has_data = true;
  t.data = std::move(data);
  return t;
}

format::Tensor mapped(uint64_t id, std::string data, uint64_t base, format::DeltaMap map, double scalar) {
  format::Tensor t = defining(id, std::move(data), base);
  t.delta_map = map;
  t.delta_scalar = scalar;
  return t;
}

format::Tensor referring(uint64_t id) {
  format::Tensor t = defining(id, "");
  t.role = format::Role::Input;
  t.content_ref = true;
  return t;
}

class DeltaReadTest : public ::testing::Test {
 protected:
  // Contents 1..4 are the versions v1..v4 of one tensor: 1 whole, 2 a delta
  // on 1 (another record), 3 a delta on 2 (its input, in its own record),
  // 4 a delta on 3; record "read" refers to 4 (a chain of three links).
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("acc-delta-read-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    path_ = (dir_ / "records.acc").string();
    for (uint32_t v = 1; v <= 4; ++v) versions_[v] = values(v);
    add("define", {defining(1, versions_[1])});
    add("update", {defining(2, xorOf(versions_[2], versions_[1]), 1)});
    add("in_place", {referring(2), defining(3, xorOf(versions_[3], versions_[2]), 2)});
    add("again", {referring(3), defining(4, xorOf(versions_[4], versions_[3]), 3)});
    add("read", {referring(4), referring(1)});
    // Format v9: 5 whole; 6 = 5 * 0.9 in place (one element as no correct
    // kernel would have it); 7 = sqrt(6), 8 = 7 / 3, each out of place
    // from its input; "read_mapped" refers to 8, the end of a chain of
    // three mapped links.
    versions_[5] = floats(1.0f);
    versions_[6] = eachFloat(versions_[5], [](float x) { return x * 0.9f; });
    versions_[6][40] ^= 1;
    versions_[7] = eachFloat(versions_[6], [](float x) { return std::sqrt(x); });
    versions_[8] = eachFloat(versions_[7], [](float x) { return x / 3.0f; });
    add("define_mapped", {defining(5, versions_[5])});
    add("mul_", {referring(5), mapped(6, mappedXor(versions_[6], versions_[5], format::DeltaMap::Multiply, 0.9), 5,
                                      format::DeltaMap::Multiply, 0.9)});
    add("sqrt", {referring(6),
                 mapped(7, mappedXor(versions_[7], versions_[6], format::DeltaMap::Sqrt, 0), 6, format::DeltaMap::Sqrt, 0)});
    add("div", {referring(7), mapped(8, mappedXor(versions_[8], versions_[7], format::DeltaMap::Divide, 3), 7,
                                     format::DeltaMap::Divide, 3)});
    add("read_mapped", {referring(8)});
    write();
  }
  void TearDown() override { fs::remove_all(dir_); }

  void add(const std::string& name, std::vector<format::Tensor> tensors) {
    format::OpRecord r;
    r.index = records_.size();
    r.name = name;
    r.op = "aten::" + name;
    r.tensors = std::move(tensors);
    records_.push_back(std::move(r));
  }

  void write() {
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    const std::string header = format::fileHeader();
    ASSERT_EQ(::write(fd, header.data(), header.size()), static_cast<ssize_t>(header.size()));
    {
      // One small data frame per kilobyte: a damaged frame costs one part of one tensor.
      format::RecordSink sink(fd, 1, 1, 1024);
      for (const format::OpRecord& r : records_) {
        std::string item;
        format::encode(r, item);
        format::appendData(r, item);
        sink.add(item);
      }
      ASSERT_TRUE(sink.flush().ok) << sink.error();
    }
    ::close(fd);
  }

  // Every op record read with data, by name.
  std::map<std::string, format::OpRecord> readAll(ReadDamage* damage = nullptr) {
    std::map<std::string, format::OpRecord> out;
    ReadDamage d = forEachRecord(path_, [&](const RawRecord& raw) {
      if (raw.kind != format::RecordKind::Op) return;
      format::OpRecord r = raw.decodeOp(true);
      out[r.name] = std::move(r);
    });
    if (damage) *damage = d;
    return out;
  }

  fs::path dir_;
  std::string path_;
  std::vector<format::OpRecord> records_;
  std::map<uint32_t, std::string> versions_;
};

TEST_F(DeltaReadTest, EveryVersionReadsBackAsItsValues) {
  ReadDamage damage;
  std::map<std::string, format::OpRecord> got = readAll(&damage);
  EXPECT_FALSE(damage.any()) << damage.describe(path_);
  auto expect = [&](const std::string& name, size_t k, uint32_t version) {
    const format::Tensor& t = got.at(name).tensors.at(k);
    EXPECT_TRUE(t.has_data) << name << " " << k;
    EXPECT_EQ(t.delta_base, 0u) << name << " " << k;  // undone
    EXPECT_TRUE(t.data == versions_[version]) << name << " tensor " << k << " is not v" << version;
  };
  expect("define", 0, 1);
  expect("update", 0, 2);    // base in an earlier record
  expect("in_place", 0, 2);  // a reference to a delta
  expect("in_place", 1, 3);  // base in the same record
  expect("again", 1, 4);
  expect("read", 0, 4);      // a chain of three links read from the file
  expect("read", 1, 1);
}

TEST_F(DeltaReadTest, MappedDeltasReadBackAsTheirValues) {
  // Stored mostly as zeros: the op done again predicts all but one element.
  EXPECT_EQ(std::count(records_[6].tensors[1].data.begin(), records_[6].tensors[1].data.end(), '\0'), 4095);
  std::map<std::string, format::OpRecord> got = readAll();
  EXPECT_TRUE(got.at("mul_").tensors.at(1).data == versions_[6]);
  EXPECT_TRUE(got.at("sqrt").tensors.at(1).data == versions_[7]);  // negative values' NaNs too
  EXPECT_TRUE(got.at("div").tensors.at(1).data == versions_[8]);
  EXPECT_TRUE(got.at("read_mapped").tensors.at(0).data == versions_[8]);
  EXPECT_EQ(got.at("read_mapped").tensors.at(0).delta_map, format::DeltaMap::None);  // undone
}

TEST_F(DeltaReadTest, AMappedChainIsUndoneFromItsEnd) {
  // Only the last record's data is read: its chain's links come from the
  // file, and each is undone on the values below it.
  std::string late;
  ReadDamage damage = forEachRecord(path_, [&](const RawRecord& raw) {
    if (raw.kind != format::RecordKind::Op) return;
    format::OpRecord r = raw.decodeOp(false);
    if (r.name != "read_mapped") return;
    EXPECT_EQ(r.tensors.at(0).delta_base, 7u);
    EXPECT_EQ(r.tensors.at(0).delta_map, format::DeltaMap::Divide);
    raw.loadData(r);
    late = r.tensors.at(0).data;
  });
  EXPECT_FALSE(damage.any()) << damage.describe(path_);
  EXPECT_TRUE(late == versions_[8]);
}

TEST_F(DeltaReadTest, DataLoadedLaterIsUndoneToo) {
  std::string late;
  forEachRecord(path_, [&](const RawRecord& raw) {
    if (raw.kind != format::RecordKind::Op) return;
    format::OpRecord r = raw.decodeOp(false);
    if (r.name != "read") return;
    EXPECT_EQ(r.tensors.at(0).delta_base, 3u);  // the reference carries its content's base
    raw.loadData(r);
    late = r.tensors.at(0).data;
  });
  EXPECT_TRUE(late == versions_[4]);
}

TEST_F(DeltaReadTest, AnUnreadableBaseCostsTheDataNotTheValues) {
  // Damage the data frame holding the start of content 1's bytes: every
  // version chained on it loses its data; nothing reads as wrong values.
  std::string bytes;
  {
    std::ifstream in(path_, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  uint32_t magic = 0;
  size_t at = format::kFileHeaderSize;
  std::memcpy(&magic, bytes.data() + at, 4);
  ASSERT_TRUE(format::isDataFrameMagic(magic));  // the define record's bytes come first
  bytes[at + format::kDataFrameHeaderSize + 8] ^= 0x5a;
  {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  ReadDamage damage;
  std::map<std::string, format::OpRecord> got = readAll(&damage);
  for (const char* name : {"define", "update", "in_place", "again", "read"}) {
    for (const format::Tensor& t : got.at(name).tensors) {
      EXPECT_FALSE(t.has_data) << name;  // each depends on content 1
      EXPECT_TRUE(t.data.empty()) << name;
    }
  }
  EXPECT_EQ(damage.missing_data, 8u);
  EXPECT_TRUE(got.at("read_mapped").tensors.at(0).data == versions_[8]);  // another chain
}

// `t` in a record, encoded and decoded again.
format::OpRecord roundTrip(format::Tensor t) {
  format::OpRecord r;
  r.name = "aten::add_.0.fwd";
  r.tensors.push_back(std::move(t));
  std::string item;
  format::encode(r, item);
  std::string_view record, data;
  format::splitRecord(item, record, data);
  format::RecordCursor cursor(record);
  format::RecordKind kind;
  std::string_view body;
  if (!cursor.next(kind, body)) throw format::FormatError("no record");
  return format::decodeOp(body, false, 0);
}

TEST(DeltaFormat, BaseRoundTripsAndBadBasesAreRefused) {
  format::OpRecord back = roundTrip(defining(7, std::string(8, 'x'), 5));
  EXPECT_EQ(back.tensors.at(0).delta_base, 5u);
  EXPECT_EQ(back.tensors.at(0).content, 7u);

  auto refused = [](format::Tensor t) {
    try {
      roundTrip(std::move(t));
    } catch (const format::FormatError&) {
      return true;
    }
    return false;
  };
  format::OpRecord mapped_back = roundTrip(mapped(7, std::string(8, 'x'), 5, format::DeltaMap::Divide, 1.5));
  EXPECT_EQ(mapped_back.tensors.at(0).delta_map, format::DeltaMap::Divide);
  EXPECT_EQ(mapped_back.tensors.at(0).delta_scalar, 1.5);
  EXPECT_EQ(back.tensors.at(0).delta_map, format::DeltaMap::None);

  EXPECT_TRUE(refused(defining(7, "abcd", 7)));  // not an earlier content
  EXPECT_TRUE(refused(defining(7, "abcd", 9)));
  // The encoder writes no base where the format has none (no data, a
  // reference): nothing to refuse, the base is dropped.
  format::Tensor integers = mapped(7, std::string(8, 'x'), 5, format::DeltaMap::Multiply, 2);
  integers.dtype = format::Dtype::Int64;  // a map only floats have
  EXPECT_TRUE(refused(integers));
  EXPECT_TRUE(refused(mapped(7, "abcd", 5, static_cast<format::DeltaMap>(77), 1)));
  EXPECT_TRUE(refused(mapped(7, "abcd", 5, format::DeltaMap::Multiply, NAN)));
  format::Tensor no_data = defining(7, "", 5);
  no_data.has_data = false;
  EXPECT_FALSE(refused(no_data));
}

}  // namespace
}  // namespace acc::analyzer
