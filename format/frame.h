// Append-only files of self-delimiting zstd frames. A file is a 16-byte
// header followed by frames; each frame is a header (magic, sizes) and one
// zstd frame carrying its own content checksum. A crash can only leave an
// incomplete last frame, which readers detect and skip.
//
// Record frames hold records. Data frames (format v2) hold slices of the
// data stream, the concatenated tensor bytes, and their header says where
// the slice starts; readers skip them without decompressing until a
// record's bytes are asked for. Shuffled data frames (v7) hold the slice's
// bytes regrouped by their place in each 4-byte word (byteShuffle4: the
// sign and exponent bytes of float32 values side by side, as HDF5's and
// Blosc's shuffle filters do), which zstd compresses better; readers undo
// it, so the data stream is the same.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace acc::format {

constexpr char kFileMagic[8] = {'A', 'C', 'C', 'R', 'E', 'C', '\0', '\0'};
constexpr size_t kFileHeaderSize = 16;
constexpr uint32_t kFrameMagic = 0x46434341;  // "ACCF"
constexpr size_t kFrameHeaderSize = 12;
constexpr uint32_t kMaxFramePayload = 1u << 30;
constexpr uint32_t kDataFrameMagic = 0x44434341;  // "ACCD"
constexpr uint32_t kShuffledDataFrameMagic = 0x53434341;  // "ACCS", v7
constexpr size_t kDataFrameHeaderSize = 20;       // magic, sizes, u64 stream offset

std::string fileHeader();

// Compresses one payload into a complete frame (header included).
class FrameEncoder {
 public:
  explicit FrameEncoder(int zstd_level);
  ~FrameEncoder();
  FrameEncoder(const FrameEncoder&) = delete;
  FrameEncoder& operator=(const FrameEncoder&) = delete;
  void encode(std::string_view payload, std::string& frame);
  // A data frame: `payload` is the data stream from `stream_offset` on;
  // shuffled (v7) unless `shuffle` is false.
  void encodeData(std::string_view payload, uint64_t stream_offset, std::string& frame, bool shuffle = true);
  // The same for a payload already shuffled (byteShuffle4).
  void encodeShuffledData(std::string_view shuffled, uint64_t stream_offset, std::string& frame);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Where one data frame is in the file and what part of the stream it holds.
struct DataFrameRef {
  uint64_t file_offset = 0;  // of its compressed bytes
  uint32_t compressed = 0, size = 0;
  uint64_t stream_offset = 0;
  bool shuffled = false;  // v7: its bytes byteShuffle4'd before compression
};

inline bool isDataFrameMagic(uint32_t magic) {
  return magic == kDataFrameMagic || magic == kShuffledDataFrameMagic;
}

// Byte i of 4-byte word w goes to plane i (out[i * words + w]); the bytes
// after the last whole word stay as they are. byteUnshuffle4 undoes it.
void byteShuffle4(const char* in, size_t size, char* out);
void byteUnshuffle4(const char* in, size_t size, char* out);

// Decompresses whole data frames; one per thread, so frames can be
// decompressed in parallel (the file is read with pread).
class DataFrameInflater {
 public:
  DataFrameInflater();
  ~DataFrameInflater();
  DataFrameInflater(const DataFrameInflater&) = delete;
  DataFrameInflater& operator=(const DataFrameInflater&) = delete;
  // Reads `frame` from `fd` and decompresses its `size` bytes into `out`;
  // false when it cannot be read or fails its checksum.
  bool inflate(int fd, const DataFrameRef& frame, char* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A whole data frame a caller of FrameReader::readDataDeferred decompresses.
struct DeferredFrame {
  DataFrameRef frame;
  size_t index = 0;  // for FrameReader::markCorruptDataFrame
  char* out = nullptr;
};

// Reads record frames one at a time, so memory stays bounded by the largest
// frame; data frames are indexed on the way and decompressed only on demand.
class FrameReader {
 public:
  explicit FrameReader(const std::string& path);  // throws FormatError
  ~FrameReader();
  FrameReader(const FrameReader&) = delete;
  FrameReader& operator=(const FrameReader&) = delete;

  // Fills `payload` with the next intact record frame; false at the end. A
  // corrupt frame is counted and skipped by searching for the next header.
  bool next(std::string& payload);

  // Copies [offset, offset + size) of the data stream into `out`, from the
  // data frames passed so far (the writer puts data before the records that
  // refer to it). False when part of it is missing or corrupt.
  bool readData(uint64_t offset, uint64_t size, char* out);

  // The same, except that frames lying whole inside the range are appended
  // to `deferred` for the caller to decompress (on any thread, with a
  // DataFrameInflater on fd()); slices of frames are copied now.
  bool readDataDeferred(uint64_t offset, uint64_t size, char* out, std::vector<DeferredFrame>& deferred);
  void markCorruptDataFrame(size_t index);  // a deferred frame failed to decompress
  int fd() const;

  uint64_t framesRead() const { return frames_; }  // record frames
  uint64_t dataFramesSeen() const { return data_frames_.size(); }
  uint64_t corruptFrames() const { return corrupt_; }
  uint64_t corruptDataFrames() const { return corrupt_data_; }  // found by readData
  uint64_t truncatedBytes() const { return truncated_; }  // incomplete tail
  uint16_t version() const { return version_; }

 private:
  bool resync();
  bool skipDataFrame(long frame_start, const char* header);
  bool inflateDataFrame(size_t index, char* out);
  DataFrameInflater inflater_;
  std::FILE* file_ = nullptr;
  std::string path_;
  uint16_t version_ = 0;
  uint64_t file_size_ = 0;
  uint64_t frames_ = 0, corrupt_ = 0, corrupt_data_ = 0, truncated_ = 0;
  std::string compressed_;
  std::vector<DataFrameRef> data_frames_;  // in stream order
  std::vector<char> bad_data_;             // per data frame: failed to decompress
  size_t cached_ = SIZE_MAX;               // data frame held in cache_
  std::string cache_;
  struct Decompressor;
  std::unique_ptr<Decompressor> dctx_;
};

}  // namespace acc::format
