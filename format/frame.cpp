#include "format/frame.h"

#include <cstdint>
// For ZSTD_c_literalCompressionMode (below); a parameter the shared
// library has taken under this number since zstd 1.4.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>

#include "format/bytes.h"
#include "format/record.h"

namespace acc::format {
namespace {

void putU32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void putU64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }

uint32_t getU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

uint64_t getU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Compresses `payload` after the `header_size` bytes already in `frame` and
// patches the compressed size into bytes 4..7.
void compressInto(ZSTD_CCtx* ctx, std::string_view payload, size_t header_size, std::string& frame) {
  size_t bound = ZSTD_compressBound(payload.size());
  frame.resize(header_size + bound);
  size_t n = ZSTD_compress2(ctx, frame.data() + header_size, bound, payload.data(), payload.size());
  if (ZSTD_isError(n)) throw FormatError(std::string("zstd: ") + ZSTD_getErrorName(n));
  frame.resize(header_size + n);
  uint32_t size32 = static_cast<uint32_t>(n);
  std::memcpy(frame.data() + 4, &size32, 4);
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
  std::string shuffled;  // a data frame's payload, shuffled
  ~Impl() { ZSTD_freeCCtx(ctx); }
};

FrameEncoder::FrameEncoder(int zstd_level) : impl_(std::make_unique<Impl>()) {
  ZSTD_CCtx_setParameter(impl_->ctx, ZSTD_c_compressionLevel, zstd_level);
  ZSTD_CCtx_setParameter(impl_->ctx, ZSTD_c_checksumFlag, 1);
  // zstd's negative levels store literals as they are; shuffled float bytes
  // are nearly all literals, whose sign-and-exponent planes a Huffman code
  // shrinks. With it, level -100 compresses level-2 data as small as level 1
  // (0.65 against -1's 0.72 of its size) and as fast as -1 (bench/README.md,
  // "Level-2 bytes"). Levels 1 and up code literals so already. A library
  // that refuses the parameter compresses as before: larger, nothing lost.
  ZSTD_CCtx_setParameter(impl_->ctx, ZSTD_c_literalCompressionMode, ZSTD_ps_enable);
}

FrameEncoder::~FrameEncoder() = default;

void FrameEncoder::encode(std::string_view payload, std::string& frame) {
  frame.clear();
  putU32(frame, kFrameMagic);
  putU32(frame, 0);  // compressed size, patched below
  putU32(frame, static_cast<uint32_t>(payload.size()));
  compressInto(impl_->ctx, payload, kFrameHeaderSize, frame);
}

namespace {
void putDataHeader(std::string& frame, uint32_t magic, size_t size, uint64_t stream_offset) {
  frame.clear();
  putU32(frame, magic);
  putU32(frame, 0);
  putU32(frame, static_cast<uint32_t>(size));
  putU64(frame, stream_offset);
}
}  // namespace

void FrameEncoder::encodeData(std::string_view payload, uint64_t stream_offset, std::string& frame, bool shuffle) {
  if (!shuffle) {
    putDataHeader(frame, kDataFrameMagic, payload.size(), stream_offset);
    compressInto(impl_->ctx, payload, kDataFrameHeaderSize, frame);
    return;
  }
  impl_->shuffled.resize(payload.size());
  byteShuffle4(payload.data(), payload.size(), impl_->shuffled.data());
  encodeShuffledData(impl_->shuffled, stream_offset, frame);
}

void FrameEncoder::encodeShuffledData(std::string_view shuffled, uint64_t stream_offset, std::string& frame) {
  putDataHeader(frame, kShuffledDataFrameMagic, shuffled.size(), stream_offset);
  compressInto(impl_->ctx, shuffled, kDataFrameHeaderSize, frame);
}

namespace {

#if defined(__x86_64__)
// 16 words at a time: each 16-byte load grouped by byte place (pshufb),
// then the four groups of the four loads transposed, so that each store
// writes 16 bytes of one plane. A shuffle at memory speed, where a byte
// loop cost the recorder's writer more than zstd did.
__attribute__((target("ssse3"))) size_t shuffle4Ssse3(const char* in, size_t words, char* out) {
  const __m128i group = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  size_t w = 0;
  for (; w + 16 <= words; w += 16) {
    __m128i a = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 4 * w)), group);
    __m128i b = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 4 * w + 16)), group);
    __m128i c = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 4 * w + 32)), group);
    __m128i d = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 4 * w + 48)), group);
    // a = [a0 a1 a2 a3] as 32-bit lanes (lane k: byte place k of 4 words).
    __m128i ab_lo = _mm_unpacklo_epi32(a, b), ab_hi = _mm_unpackhi_epi32(a, b);
    __m128i cd_lo = _mm_unpacklo_epi32(c, d), cd_hi = _mm_unpackhi_epi32(c, d);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + w), _mm_unpacklo_epi64(ab_lo, cd_lo));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + words + w), _mm_unpackhi_epi64(ab_lo, cd_lo));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * words + w), _mm_unpacklo_epi64(ab_hi, cd_hi));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * words + w), _mm_unpackhi_epi64(ab_hi, cd_hi));
  }
  return w;
}

__attribute__((target("ssse3"))) size_t unshuffle4Ssse3(const char* in, size_t words, char* out) {
  const __m128i ungroup = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  size_t w = 0;
  for (; w + 16 <= words; w += 16) {
    __m128i p0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + w));
    __m128i p1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + words + w));
    __m128i p2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * words + w));
    __m128i p3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 3 * words + w));
    // Lane k of the result for words 4j..4j+3: 4 bytes of plane k.
    __m128i lo01 = _mm_unpacklo_epi32(p0, p1), hi01 = _mm_unpackhi_epi32(p0, p1);
    __m128i lo23 = _mm_unpacklo_epi32(p2, p3), hi23 = _mm_unpackhi_epi32(p2, p3);
    __m128i g0 = _mm_unpacklo_epi64(lo01, lo23), g1 = _mm_unpackhi_epi64(lo01, lo23);
    __m128i g2 = _mm_unpacklo_epi64(hi01, hi23), g3 = _mm_unpackhi_epi64(hi01, hi23);
    // g_j = [plane0 of words 4j.., plane1.., plane2.., plane3..]: the same
    // 4x4 byte transpose turns it back into 4 words.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4 * w), _mm_shuffle_epi8(g0, ungroup));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4 * w + 16), _mm_shuffle_epi8(g1, ungroup));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4 * w + 32), _mm_shuffle_epi8(g2, ungroup));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4 * w + 48), _mm_shuffle_epi8(g3, ungroup));
  }
  return w;
}

bool hasSsse3() {
  static const bool yes = __builtin_cpu_supports("ssse3");
  return yes;
}
#endif

}  // namespace

void byteShuffle4(const char* in, size_t size, char* out) {
  const size_t words = size / 4;
  size_t w = 0;
#if defined(__x86_64__)
  if (hasSsse3()) w = shuffle4Ssse3(in, words, out);
#endif
  for (; w < words; ++w) {
    out[w] = in[4 * w];
    out[words + w] = in[4 * w + 1];
    out[2 * words + w] = in[4 * w + 2];
    out[3 * words + w] = in[4 * w + 3];
  }
  std::memcpy(out + 4 * words, in + 4 * words, size - 4 * words);
}

void byteUnshuffle4(const char* in, size_t size, char* out) {
  const size_t words = size / 4;
  size_t w = 0;
#if defined(__x86_64__)
  if (hasSsse3()) w = unshuffle4Ssse3(in, words, out);
#endif
  for (; w < words; ++w) {
    out[4 * w] = in[w];
    out[4 * w + 1] = in[words + w];
    out[4 * w + 2] = in[2 * words + w];
    out[4 * w + 3] = in[3 * words + w];
  }
  std::memcpy(out + 4 * words, in + 4 * words, size - 4 * words);
}

struct DataFrameInflater::Impl {
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  std::string compressed, shuffled;
  ~Impl() { ZSTD_freeDCtx(ctx); }
};

DataFrameInflater::DataFrameInflater() : impl_(std::make_unique<Impl>()) {}
DataFrameInflater::~DataFrameInflater() = default;

bool DataFrameInflater::inflate(int fd, const DataFrameRef& f, char* out) {
  impl_->compressed.resize(f.compressed);
  ssize_t got = ::pread(fd, impl_->compressed.data(), f.compressed, static_cast<off_t>(f.file_offset));
  if (got != static_cast<ssize_t>(f.compressed)) return false;
  char* into = out;
  if (f.shuffled) {
    impl_->shuffled.resize(f.size);
    into = impl_->shuffled.data();
  }
  size_t n = ZSTD_decompressDCtx(impl_->ctx, into, f.size, impl_->compressed.data(), f.compressed);
  if (ZSTD_isError(n) || n != f.size) return false;
  if (f.shuffled) byteUnshuffle4(into, f.size, out);
  return true;
}

struct FrameReader::Decompressor {
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  ~Decompressor() { ZSTD_freeDCtx(ctx); }
};

FrameReader::FrameReader(const std::string& path) : path_(path), dctx_(std::make_unique<Decompressor>()) {
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
  struct stat st;
  if (::fstat(fileno(file_), &st) == 0) file_size_ = static_cast<uint64_t>(st.st_size);
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
    if (pos - start >= 4 && (window == kFrameMagic || (version_ >= 2 && window == kDataFrameMagic) ||
                             (version_ >= 7 && window == kShuffledDataFrameMagic))) {
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
    if ((magic == kDataFrameMagic && version_ >= 2) || (magic == kShuffledDataFrameMagic && version_ >= 7)) {
      if (skipDataFrame(frame_start, header)) continue;
      return false;
    }
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
    size_t n = ZSTD_decompressDCtx(dctx_->ctx, payload.data(), usize, compressed_.data(), csize);
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

// Indexes the data frame at `frame_start` (its first 12 header bytes read)
// and moves past it; false at the end of the file.
bool FrameReader::skipDataFrame(long frame_start, const char* header) {
  char rest[kDataFrameHeaderSize - kFrameHeaderSize];
  size_t got = std::fread(rest, 1, sizeof rest, file_);
  const uint32_t csize = getU32(header + 4), usize = getU32(header + 8);
  const uint64_t body = static_cast<uint64_t>(frame_start) + kDataFrameHeaderSize;
  if (got == sizeof rest && body + csize > file_size_) {
    struct stat st;  // the file may still be growing
    if (::fstat(fileno(file_), &st) == 0) file_size_ = static_cast<uint64_t>(st.st_size);
  }
  if (got < sizeof rest || usize > kMaxFramePayload || csize > kMaxFramePayload || body + csize > file_size_) {
    // A torn last frame, or a corrupt header: only a later frame tells.
    std::fseek(file_, frame_start + 1, SEEK_SET);
    if (resync()) {
      ++corrupt_;
      return true;
    }
    truncated_ += file_size_ > static_cast<uint64_t>(frame_start) ? file_size_ - frame_start : 0;
    return false;
  }
  DataFrameRef ref{body, csize, usize, getU64(rest), getU32(header) == kShuffledDataFrameMagic};
  auto at = std::upper_bound(data_frames_.begin(), data_frames_.end(), ref.stream_offset,
                             [](uint64_t o, const DataFrameRef& f) { return o < f.stream_offset; });
  const size_t index = static_cast<size_t>(at - data_frames_.begin());
  data_frames_.insert(at, ref);
  bad_data_.insert(bad_data_.begin() + static_cast<long>(index), 0);
  if (cached_ != SIZE_MAX && cached_ >= index) ++cached_;
  std::fseek(file_, static_cast<long>(body + csize), SEEK_SET);
  return true;
}

// Decompresses data frame `index` into `out` (its full size); a failure
// marks the frame bad and is counted once.
bool FrameReader::inflateDataFrame(size_t index, char* out) {
  if (inflater_.inflate(fileno(file_), data_frames_[index], out)) return true;
  markCorruptDataFrame(index);
  return false;
}

void FrameReader::markCorruptDataFrame(size_t index) {
  if (!bad_data_[index]) ++corrupt_data_;
  bad_data_[index] = 1;
}

int FrameReader::fd() const { return fileno(file_); }

bool FrameReader::readData(uint64_t offset, uint64_t size, char* out) {
  std::vector<DeferredFrame> whole;
  if (!readDataDeferred(offset, size, out, whole)) return false;
  for (const DeferredFrame& d : whole) {
    if (!inflateDataFrame(d.index, d.out)) return false;
  }
  return true;
}

bool FrameReader::readDataDeferred(uint64_t offset, uint64_t size, char* out, std::vector<DeferredFrame>& deferred) {
  if (size == 0) return true;
  const uint64_t end = offset + size;
  // The last frame starting at or before `offset`.
  auto it = std::upper_bound(data_frames_.begin(), data_frames_.end(), offset,
                             [](uint64_t o, const DataFrameRef& f) { return o < f.stream_offset; });
  if (it == data_frames_.begin()) return false;
  size_t i = static_cast<size_t>(it - data_frames_.begin()) - 1;
  uint64_t pos = offset;
  for (; pos < end && i < data_frames_.size(); ++i) {
    const DataFrameRef& f = data_frames_[i];
    const uint64_t frame_end = f.stream_offset + f.size;
    if (f.stream_offset > pos) return false;  // a gap: that frame is lost
    if (frame_end <= pos) continue;
    const uint64_t n = std::min(frame_end, end) - pos;
    if (bad_data_[i]) return false;
    if (f.stream_offset == pos && n == f.size && cached_ != i) {
      // The whole frame is wanted: decompressed straight into place, later.
      deferred.push_back(DeferredFrame{f, i, out + (pos - offset)});
    } else {
      if (cached_ != i) {
        cache_.resize(f.size);
        cached_ = SIZE_MAX;
        if (!inflateDataFrame(i, cache_.data())) return false;
        cached_ = i;
      }
      std::memcpy(out + (pos - offset), cache_.data() + (pos - f.stream_offset), n);
    }
    pos += n;
  }
  return pos == end;
}

}  // namespace acc::format
