#include "format/frame.h"

#include <zstd.h>

#include <cstring>

#include "format/bytes.h"
#include "format/record.h"

namespace acc::format {
namespace {

void putU32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }

uint32_t getU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

std::string fileHeader() {
  std::string h(kFileMagic, sizeof kFileMagic);
  uint16_t version = kFormatVersion;
  h.append(reinterpret_cast<const char*>(&version), 2);
  h.append(kFileHeaderSize - h.size(), '\0');
  return h;
}

struct FrameEncoder::Impl {
  ZSTD_CCtx* ctx = ZSTD_createCCtx();
  ~Impl() { ZSTD_freeCCtx(ctx); }
};

FrameEncoder::FrameEncoder(int zstd_level) : impl_(std::make_unique<Impl>()) {
  ZSTD_CCtx_setParameter(impl_->ctx, ZSTD_c_compressionLevel, zstd_level);
  ZSTD_CCtx_setParameter(impl_->ctx, ZSTD_c_checksumFlag, 1);
}

FrameEncoder::~FrameEncoder() = default;

void FrameEncoder::encode(std::string_view payload, std::string& frame) {
  frame.clear();
  putU32(frame, kFrameMagic);
  putU32(frame, 0);  // compressed size, patched below
  putU32(frame, static_cast<uint32_t>(payload.size()));
  size_t bound = ZSTD_compressBound(payload.size());
  frame.resize(kFrameHeaderSize + bound);
  size_t n = ZSTD_compress2(impl_->ctx, frame.data() + kFrameHeaderSize, bound, payload.data(),
                            payload.size());
  if (ZSTD_isError(n)) throw FormatError(std::string("zstd: ") + ZSTD_getErrorName(n));
  frame.resize(kFrameHeaderSize + n);
  uint32_t size32 = static_cast<uint32_t>(n);
  std::memcpy(frame.data() + 4, &size32, 4);
}

FrameReader::FrameReader(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) throw FormatError(path + ": " + std::strerror(errno));
  char header[kFileHeaderSize];
  size_t got = std::fread(header, 1, sizeof header, file_);
  if (got != sizeof header || std::memcmp(header, kFileMagic, sizeof kFileMagic) != 0) {
    std::fclose(file_);
    file_ = nullptr;
    throw FormatError(path + ": not an acc recording (bad file header)");
  }
  std::memcpy(&version_, header + 8, 2);
  if (version_ > kFormatVersion) {
    std::fclose(file_);
    file_ = nullptr;
    throw FormatError(path + ": format version " + std::to_string(version_) +
                      " is newer than this reader's " + std::to_string(kFormatVersion) +
                      "; update acc-analyzer");
  }
}

FrameReader::~FrameReader() {
  if (file_ != nullptr) std::fclose(file_);
}

bool FrameReader::resync() {
  // Scan byte by byte for the next frame magic after a corrupt frame.
  long start = std::ftell(file_);
  uint32_t window = 0;
  int c;
  long pos = start;
  while ((c = std::fgetc(file_)) != EOF) {
    ++pos;
    window = (window >> 8) | (static_cast<uint32_t>(c) << 24);
    if (pos - start >= 4 && window == kFrameMagic) {
      std::fseek(file_, pos - 4, SEEK_SET);
      return true;
    }
  }
  return false;
}

bool FrameReader::next(std::string& payload) {
  for (;;) {
    long frame_start = std::ftell(file_);
    char header[kFrameHeaderSize];
    size_t got = std::fread(header, 1, sizeof header, file_);
    if (got == 0) return false;
    if (got < sizeof header) {
      truncated_ += got;
      return false;
    }
    uint32_t magic = getU32(header), csize = getU32(header + 4), usize = getU32(header + 8);
    if (magic != kFrameMagic || usize > kMaxFramePayload || csize > kMaxFramePayload) {
      ++corrupt_;
      std::fseek(file_, frame_start + 1, SEEK_SET);
      if (!resync()) return false;
      continue;
    }
    compressed_.resize(csize);
    got = std::fread(compressed_.data(), 1, csize, file_);
    if (got < csize) {
      // Either the writer died mid-frame (the usual end after a crash) or
      // this header's size is corrupt: only a later frame tells them apart.
      std::fseek(file_, frame_start + 1, SEEK_SET);
      if (resync()) {
        ++corrupt_;
        continue;
      }
      truncated_ += kFrameHeaderSize + got;
      return false;
    }
    payload.resize(usize);
    size_t n = ZSTD_decompress(payload.data(), usize, compressed_.data(), csize);
    if (ZSTD_isError(n) || n != usize) {
      ++corrupt_;
      std::fseek(file_, frame_start + 1, SEEK_SET);
      if (!resync()) return false;
      continue;
    }
    ++frames_;
    return true;
  }
}

}  // namespace acc::format
