// recorder::Writer: submitted records reach the file complete and in order,
// counters add up, drop mode drops instead of waiting, and open errors name
// the path.
#include "recorder/write/writer.h"

#include <gtest/gtest.h>
#include <cstdint>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "format/frame.h"
#include "format/record.h"
#include "recorder/write/data_buffer.h"
#include "tests/recorder/read_ops.h"

#include "tests/temp_dir.h"

namespace acc::recorder {
namespace {

namespace fs = std::filesystem;

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<long>(bytes.size()));
}

// Pseudo-random bytes, so zstd cannot shrink them to nothing.
std::string pattern(uint64_t index, size_t bytes) {
  std::string data(bytes, '\0');
  uint64_t x = index * 0x9E3779B97F4A7C15ULL + 1;
  for (char& c : data) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  return data;
}

// A CPU tensor of `bytes` uint8 elements whose bytes are recorded: in its
// `data`, or held apart (`apart`: their size only, the caller queues them).
format::Tensor byteTensor(size_t bytes, bool apart, uint32_t position = 0) {
  format::Tensor t;
  t.dtype = format::Dtype::UInt8;
  t.device = "cpu";
  t.position = position;
  t.shape = {static_cast<int64_t>(bytes)};
  t.strides = {1};
  t.has_data = true;
  t.data_apart = apart;
  t.data_size = apart ? bytes : 0;
  return t;
}

// What the observer submits: the record, then its tensor bytes.
std::string encodedOp(uint64_t index, size_t data_bytes = 0, uint64_t thread = 0, size_t scalar_bytes = 0) {
  format::OpRecord r;
  r.index = index;
  r.op = "aten::add";
  r.name = "aten::add." + std::to_string(index) + ".fwd";
  r.thread = thread;
  r.scalars = {{2, std::to_string(index)}};
  if (scalar_bytes) r.scalars.push_back({3, std::string(scalar_bytes, 'x')});
  if (data_bytes > 0) {
    format::Tensor t = byteTensor(data_bytes, /*apart=*/false);
    t.data = pattern(index, data_bytes);
    r.tensors.push_back(std::move(t));
  }
  std::string out;
  format::encode(r, out);
  format::appendData(r, out);
  return out;
}

struct FileContents {
  std::vector<format::OpRecord> ops;  // tensors' data loaded; "unreadable" when it could not be
  uint64_t frames = 0;       // record and data frames
  uint64_t data_frames = 0;
  uint64_t corrupt = 0, corrupt_data = 0;
  uint64_t truncated = 0;
};

FileContents readRecording(const std::string& path) {
  FileContents c;
  format::FrameReader reader(path);
  forEachOp(reader, [&](format::OpRecord op) {
    for (format::Tensor& t : op.tensors) {
      t.data.resize(t.data_size);
      if (!reader.readData(t.data_offset, t.data_size, t.data.data())) t.data = "unreadable";
    }
    c.ops.push_back(std::move(op));
  });
  c.data_frames = reader.dataFramesSeen();
  c.frames = reader.framesRead() + c.data_frames;
  c.corrupt = reader.corruptFrames();
  c.corrupt_data = reader.corruptDataFrames();
  c.truncated = reader.truncatedBytes();
  return c;
}

// File offsets of the frames whose header starts with `magic`.
std::vector<size_t> frameOffsets(const std::string& path, uint32_t magic) {
  std::string bytes = readFile(path);
  std::vector<size_t> out;
  for (size_t at = format::kFileHeaderSize; at + format::kFrameHeaderSize <= bytes.size();) {
    uint32_t m, csize;
    std::memcpy(&m, bytes.data() + at, 4);
    std::memcpy(&csize, bytes.data() + at + 4, 4);
    if (m == magic) out.push_back(at);
    at += (format::isDataFrameMagic(m) ? format::kDataFrameHeaderSize : format::kFrameHeaderSize) + csize;
  }
  return out;
}

class WriterTest : public ::testing::Test {
 protected:
  test::TempDir tmp_{"acc_writer_test"};
  fs::path dir_{tmp_.path()};
  std::string path_ = (dir_ / "rank0.accrec").string();
};

TEST_F(WriterTest, RecordsReadBackCompleteAndInOrder) {
  env::Config config;
  config.frame_kb = 16;  // several frames
  constexpr uint64_t kRecords = 2000;
  Writer writer(path_, config);
  for (uint64_t i = 0; i < kRecords; ++i) ASSERT_TRUE(writer.submit(encodedOp(i, i % 7 * 10)));
  writer.stop();

  WriterCounts counts = writer.counts();
  EXPECT_EQ(counts.records_written, kRecords);
  EXPECT_EQ(counts.records_dropped, 0u);
  EXPECT_EQ(counts.records_lost, 0u);
  EXPECT_EQ(writer.ioError(), "");
  EXPECT_EQ(counts.bytes_written, fs::file_size(path_));

  FileContents file = readRecording(path_);
  EXPECT_EQ(file.corrupt, 0u);
  EXPECT_EQ(file.truncated, 0u);
  EXPECT_EQ(file.frames, counts.frames);
  EXPECT_GT(file.frames, 1u);
  ASSERT_EQ(file.ops.size(), kRecords);
  for (uint64_t i = 0; i < kRecords; ++i) {
    ASSERT_EQ(file.ops[i].index, i);
    EXPECT_EQ(file.ops[i].name, "aten::add." + std::to_string(i) + ".fwd");
    ASSERT_EQ(file.ops[i].scalars.size(), 1u);
    EXPECT_EQ(file.ops[i].scalars[0].value, std::to_string(i));
  }
}

// Tensor bytes go to data frames, whole frames and slices of frames alike,
// and each record finds exactly its own bytes again.
TEST_F(WriterTest, DataBytesSurviveAcrossDataFrames) {
  env::Config config;
  config.frame_kb = 16;
  const std::vector<size_t> sizes = {3000, 0, 40000, 1, 16384, 70000, 5, 16383};
  Writer writer(path_, config);
  for (size_t i = 0; i < sizes.size(); ++i) ASSERT_TRUE(writer.submit(encodedOp(i, sizes[i])));
  writer.stop();

  FileContents file = readRecording(path_);
  EXPECT_EQ(file.corrupt + file.corrupt_data + file.truncated, 0u);
  EXPECT_EQ(file.frames, writer.counts().frames);
  EXPECT_GE(file.data_frames, 9u);  // 150 KB of data in 16 KiB frames
  ASSERT_EQ(file.ops.size(), sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_EQ(file.ops[i].tensors.size(), sizes[i] ? 1u : 0u);
    if (sizes[i] != 0) {
      EXPECT_TRUE(file.ops[i].tensors[0].data == pattern(i, sizes[i])) << "record " << i;
    }
  }
  // Data is written before the record frame that refers to it.
  EXPECT_LT(frameOffsets(path_, format::kShuffledDataFrameMagic).front(), frameOffsets(path_, format::kFrameMagic).front());
}

TEST_F(WriterTest, CorruptDataFrameCostsOnlyTheBytesInIt) {
  env::Config config;
  config.frame_kb = 16;
  {
    Writer writer(path_, config);
    for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(writer.submit(encodedOp(i, 40000)));
  }
  // Data frames: record 0 fills the first two and part of the third.
  std::vector<size_t> data = frameOffsets(path_, format::kShuffledDataFrameMagic);
  ASSERT_GE(data.size(), 7u);
  std::string bytes = readFile(path_);
  bytes[data[1] + format::kDataFrameHeaderSize + 100] ^= 0x5a;
  writeFile(path_, bytes);

  FileContents file = readRecording(path_);
  ASSERT_EQ(file.ops.size(), 3u);  // records are in record frames, all intact
  EXPECT_EQ(file.corrupt, 0u);
  EXPECT_EQ(file.corrupt_data, 1u);
  EXPECT_EQ(file.ops[0].tensors[0].data, "unreadable");
  EXPECT_TRUE(file.ops[1].tensors[0].data == pattern(1, 40000));
  EXPECT_TRUE(file.ops[2].tensors[0].data == pattern(2, 40000));
}

TEST_F(WriterTest, FileCutInsideDataKeepsEarlierRecordsWithTheirData) {
  env::Config config;
  config.frame_kb = 16;
  {
    Writer writer(path_, config);
    // Record 0 alone fills a record frame, so it is flushed before record 1's data.
    ASSERT_TRUE(writer.submit(encodedOp(0, 20000, 0, 17 << 10)));
    ASSERT_TRUE(writer.submit(encodedOp(1, 50000)));
  }
  std::vector<size_t> data = frameOffsets(path_, format::kShuffledDataFrameMagic);
  std::vector<size_t> records = frameOffsets(path_, format::kFrameMagic);
  ASSERT_EQ(records.size(), 2u);
  ASSERT_LT(records[0], data.back());
  // Cut in the middle of record 1's last data frame, as a crash would.
  writeFile(path_, readFile(path_).substr(0, data.back() + format::kDataFrameHeaderSize + 10));

  FileContents file = readRecording(path_);
  EXPECT_GT(file.truncated, 0u);
  EXPECT_EQ(file.corrupt, 0u);
  ASSERT_EQ(file.ops.size(), 1u);
  EXPECT_EQ(file.ops[0].index, 0u);
  EXPECT_TRUE(file.ops[0].tensors[0].data == pattern(0, 20000));
}

TEST_F(WriterTest, NothingSubmittedGivesHeaderOnlyFile) {
  Writer writer(path_, env::Config{});
  writer.stop();
  EXPECT_EQ(writer.counts().records_written, 0u);
  EXPECT_EQ(writer.counts().frames, 0u);
  EXPECT_EQ(fs::file_size(path_), format::kFileHeaderSize);
  FileContents file = readRecording(path_);
  EXPECT_TRUE(file.ops.empty());
}

TEST_F(WriterTest, StopIsIdempotentAndLaterSubmitsAreDropped) {
  Writer writer(path_, env::Config{});
  ASSERT_TRUE(writer.submit(encodedOp(0)));
  writer.stop();
  writer.stop();
  EXPECT_FALSE(writer.submit(encodedOp(1)));
  WriterCounts counts = writer.counts();
  EXPECT_EQ(counts.records_written, 1u);
  EXPECT_EQ(counts.records_dropped, 1u);
  EXPECT_EQ(readRecording(path_).ops.size(), 1u);
}

TEST_F(WriterTest, DestructorStopsAndFlushes) {
  {
    Writer writer(path_, env::Config{});
    for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(writer.submit(encodedOp(i)));
  }
  EXPECT_EQ(readRecording(path_).ops.size(), 10u);
}

TEST_F(WriterTest, DropModeWithTinyBufferAccountsForEveryRecord) {
  env::Config config;
  config.on_full = env::OnFull::Drop;
  config.buffer_mb = 1;  // room for two of the records below
  config.frame_kb = 16;
  constexpr uint64_t kRecords = 64;
  std::vector<std::string> records;
  for (uint64_t i = 0; i < kRecords; ++i) records.push_back(encodedOp(i, 400 << 10));

  Writer writer(path_, config);
  uint64_t accepted = 0;
  for (auto& r : records) accepted += writer.submit(std::move(r)) ? 1 : 0;
  writer.stop();

  WriterCounts counts = writer.counts();
  EXPECT_EQ(counts.records_lost, 0u);
  EXPECT_EQ(counts.records_written + counts.records_dropped, kRecords);
  EXPECT_EQ(counts.records_written, accepted);
  // 64 records of 400 KiB submitted back to back cannot all fit in 1 MiB.
  EXPECT_GT(counts.records_dropped, 0u);

  FileContents file = readRecording(path_);
  ASSERT_EQ(file.ops.size(), counts.records_written);
  for (size_t i = 1; i < file.ops.size(); ++i) {
    EXPECT_LT(file.ops[i - 1].index, file.ops[i].index);  // order kept among survivors
  }
}

TEST_F(WriterTest, WaitModeWithTinyBufferWritesEverythingFromManyThreads) {
  env::Config config;
  config.buffer_mb = 1;
  config.frame_kb = 16;
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 50;
  Writer writer(path_, config);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        EXPECT_TRUE(writer.submit(encodedOp(i, 64 << 10, static_cast<uint64_t>(t))));
      }
    });
  }
  for (auto& th : threads) th.join();
  writer.stop();

  EXPECT_EQ(writer.counts().records_written, kThreads * kPerThread);
  EXPECT_EQ(writer.counts().records_dropped, 0u);
  FileContents file = readRecording(path_);
  ASSERT_EQ(file.ops.size(), kThreads * kPerThread);
  std::vector<uint64_t> next(kThreads, 0);
  for (const format::OpRecord& op : file.ops) {
    ASSERT_LT(op.thread, static_cast<uint64_t>(kThreads));
    EXPECT_EQ(op.index, next[op.thread]) << "thread " << op.thread;
    next[op.thread] = op.index + 1;
  }
}

TEST_F(WriterTest, UnwritablePathThrowsNamingThePath) {
  std::string bad = (dir_ / "no_such_dir" / "rank0.accrec").string();
  try {
    Writer writer(bad, env::Config{});
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
}

TEST_F(WriterTest, ExistingFileIsTruncated) {
  {
    Writer writer(path_, env::Config{});
    for (uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(writer.submit(encodedOp(i, 100)));
  }
  {
    Writer writer(path_, env::Config{});
    ASSERT_TRUE(writer.submit(encodedOp(7)));
  }
  FileContents file = readRecording(path_);
  ASSERT_EQ(file.ops.size(), 1u);
  EXPECT_EQ(file.ops[0].index, 7u);
}

}  // namespace
}  // namespace acc::recorder

namespace acc::recorder {
namespace {

// A record whose values "arrive" after a number of polls, as a device's
// copies do; throws from arrived() when told to (a failed device).
class SlowRecord final : public InFlightRecord {
 public:
  SlowRecord(uint64_t index, int polls, bool fail = false) : index_(index), polls_(polls), fail_(fail) {}
  bool arrived() override {
    if (fail_) throw std::runtime_error("device lost");
    return --polls_ < 0;
  }
  void encodeInto(std::string& out) override { out += encodedOp(index_, 100); }
  uint64_t heldBytes() const override { return 100; }

 private:
  uint64_t index_;
  int polls_;
  bool fail_;
};

// In-flight records are written when their values arrive, in submission
// order with the encoded records around them.
TEST_F(WriterTest, InFlightRecordsKeepTheirPlaceInOrder) {
  env::Config config;
  Writer writer(path_, config);
  constexpr uint64_t kRecords = 300;
  for (uint64_t i = 0; i < kRecords; ++i) {
    if (i % 3 == 0) ASSERT_TRUE(writer.submit(std::make_unique<SlowRecord>(i, static_cast<int>(i % 5))));
    else ASSERT_TRUE(writer.submit(encodedOp(i, 10)));
  }
  writer.stop();
  WriterCounts counts = writer.counts();
  EXPECT_EQ(counts.records_written, kRecords);
  EXPECT_EQ(counts.records_lost, 0u);
  EXPECT_GT(counts.in_flight_waits, 0u);  // some had to be waited for
  FileContents file = readRecording(path_);
  ASSERT_EQ(file.ops.size(), kRecords);
  for (uint64_t i = 0; i < kRecords; ++i) {
    ASSERT_EQ(file.ops[i].index, i);
    ASSERT_EQ(file.ops[i].tensors.size(), 1u);
    EXPECT_EQ(file.ops[i].tensors[0].data, pattern(i, i % 3 == 0 ? 100 : 10));
  }
}

// A device that fails costs its records, counted as lost, never the others.
TEST_F(WriterTest, FailedInFlightRecordIsCountedLost) {
  env::Config config;
  Writer writer(path_, config);
  ASSERT_TRUE(writer.submit(encodedOp(0)));
  ASSERT_TRUE(writer.submit(std::make_unique<SlowRecord>(1, 0, /*fail=*/true)));
  ASSERT_TRUE(writer.submit(encodedOp(2)));
  writer.stop();
  EXPECT_EQ(writer.counts().records_written, 2u);
  EXPECT_EQ(writer.counts().records_lost, 1u);
  FileContents file = readRecording(path_);
  ASSERT_EQ(file.ops.size(), 2u);
  EXPECT_EQ(file.ops[0].index, 0u);
  EXPECT_EQ(file.ops[1].index, 2u);
}

// Level 2's bytes held apart (what the observer submits for CPU tensors):
// the record with `data_apart` tensors, each tensor's bytes in a buffer of
// its own after whatever the item's bytes carry; read back whole, in order.
TEST_F(WriterTest, BytesHeldApartFollowTheirRecord) {
  env::Config config;
  config.frame_kb = 16;
  const std::vector<size_t> sizes = {70000, 0, 3, 200000, 16384};
  Writer writer(path_, config);
  for (uint64_t i = 0; i < sizes.size(); ++i) {
    format::OpRecord r;
    r.index = i;
    r.op = "aten::cat";
    r.name = "aten::cat." + std::to_string(i) + ".fwd";
    std::vector<DataBuffer> data;
    for (size_t k = 0; k < 3; ++k) {
      const size_t n = k == 1 ? 0 : sizes[i] + k;
      const std::string bytes = pattern(i * 10 + k, n);
      data.emplace_back(bytes.data(), bytes.size());
      r.tensors.push_back(byteTensor(n, /*apart=*/true, static_cast<uint32_t>(k)));
    }
    auto item = writer.blank();
    format::encode(r, item->bytes);
    item->data = std::move(data);
    ASSERT_TRUE(writer.submit(std::move(item)));
  }
  writer.stop();
  EXPECT_EQ(writer.counts().records_written, sizes.size());
  FileContents file = readRecording(path_);
  EXPECT_EQ(file.corrupt + file.corrupt_data + file.truncated, 0u);
  ASSERT_EQ(file.ops.size(), sizes.size());
  for (uint64_t i = 0; i < sizes.size(); ++i) {
    ASSERT_EQ(file.ops[i].tensors.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      const size_t n = k == 1 ? 0 : sizes[i] + k;
      EXPECT_TRUE(file.ops[i].tensors[k].data == pattern(i * 10 + k, n)) << "record " << i << " tensor " << k;
    }
  }
  EXPECT_EQ(dataBufferBytes().in_use, 0u);  // every buffer given back
}

// Level 2 on a budget: records with bytes wait while the buffers in use
// pass half of ACC_BUFFER_MB, so what the recorder holds of them (queued,
// being made, and kept for reuse) stays within it, and nothing is lost.
// 4 threads, each 16 records of 4 MiB of noise (slow to compress: the
// queue fills), on a 128 MiB budget; the queue's own bound alone let the
// blocks pass it.
TEST_F(WriterTest, BytesHeldApartStayWithinTheBudget) {
  env::Config config;
  config.buffer_mb = 128;
  constexpr size_t kBytes = 4 << 20;
  constexpr int kThreads = 4, kEach = 16;
  const std::string noise = pattern(99, kBytes);
  Writer writer(path_, config);
  ASSERT_LE(dataBufferBytes().peak, uint64_t{128} << 20) << "an earlier test left a higher peak";
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&writer, &noise, th] {
      for (int i = 0; i < kEach; ++i) {
        format::OpRecord r;
        r.index = static_cast<uint64_t>(th * kEach + i);
        r.op = "aten::mul";
        r.tensors.push_back(byteTensor(kBytes, /*apart=*/true));
        auto item = writer.blank();
        item->data.emplace_back(noise.data(), noise.size());
        item->data.back().data()[0] = static_cast<char>(i);
        format::encode(r, item->bytes);
        EXPECT_TRUE(writer.submit(std::move(item)));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  writer.stop();
  EXPECT_EQ(writer.counts().records_written, uint64_t{kThreads * kEach});
  EXPECT_EQ(writer.counts().records_dropped, 0u);
  EXPECT_LE(dataBufferBytes().peak, uint64_t{128} << 20);
  EXPECT_EQ(dataBufferBytes().in_use, 0u);
  EXPECT_EQ(readRecording(path_).ops.size(), uint64_t{kThreads * kEach});
}

}  // namespace
}  // namespace acc::recorder
