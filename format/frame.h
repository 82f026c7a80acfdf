// Append-only files of self-delimiting zstd frames. A file is a 16-byte
// header followed by frames; each frame is a 12-byte header (magic, sizes)
// and one zstd frame carrying its own content checksum. A crash can only
// leave an incomplete last frame, which readers detect and skip.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace acc::format {

constexpr char kFileMagic[8] = {'A', 'C', 'C', 'R', 'E', 'C', '\0', '\0'};
constexpr size_t kFileHeaderSize = 16;
constexpr uint32_t kFrameMagic = 0x46434341;  // "ACCF"
constexpr size_t kFrameHeaderSize = 12;
constexpr uint32_t kMaxFramePayload = 1u << 30;

std::string fileHeader();

// Compresses one payload into a complete frame (header included).
class FrameEncoder {
 public:
  explicit FrameEncoder(int zstd_level);
  ~FrameEncoder();
  FrameEncoder(const FrameEncoder&) = delete;
  FrameEncoder& operator=(const FrameEncoder&) = delete;
  void encode(std::string_view payload, std::string& frame);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads frames one at a time, so memory stays bounded by the largest frame.
class FrameReader {
 public:
  explicit FrameReader(const std::string& path);  // throws FormatError
  ~FrameReader();
  FrameReader(const FrameReader&) = delete;
  FrameReader& operator=(const FrameReader&) = delete;

  // Fills `payload` with the next intact frame; false at the end. A corrupt
  // frame is counted and skipped by searching for the next frame header.
  bool next(std::string& payload);

  uint64_t framesRead() const { return frames_; }
  uint64_t corruptFrames() const { return corrupt_; }
  uint64_t truncatedBytes() const { return truncated_; }  // incomplete tail
  uint16_t version() const { return version_; }

 private:
  bool resync();
  std::FILE* file_ = nullptr;
  std::string path_;
  uint16_t version_ = 0;
  uint64_t frames_ = 0, corrupt_ = 0, truncated_ = 0;
  std::string compressed_;
};

}  // namespace acc::format
