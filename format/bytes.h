// Little-endian varint byte streams: the building block of every record.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace acc::format {

struct FormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr size_t kMaxVarint = 10;

// Writes `v` as a varint at `p` (room for kMaxVarint bytes); returns its length.
inline size_t putVarint(char* p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  p[n++] = static_cast<char>(v);
  return n;
}

// Appends to `out` through a cursor: `out` may hold unwritten bytes past
// size() until finish() trims it, so call finish() before reading `out`.
// (Growing the string once in a while and storing bytes through a pointer
// is several times faster than std::string::append per field, and the
// recorder encodes a record per op.)
class ByteWriter {
 public:
  explicit ByteWriter(std::string& out) : ByteWriter(out, out.size()) {}
  // Writes from offset `at`, overwriting what `out` holds there: a scratch
  // buffer reused without trimming, read as view().
  ByteWriter(std::string& out, size_t at) : out_(out), len_(at) {}
  ByteWriter(const ByteWriter&) = delete;
  ByteWriter& operator=(const ByteWriter&) = delete;

  void u8(uint8_t v) {
    *room(1) = static_cast<char>(v);
    ++len_;
  }
  // Out of line, with grow(): inlined into each of a record's 30-odd fields,
  // the varint loop and the string's growth made the recorder's encoder
  // 6.2 KB of code, 2.2 KB without, run for every op between torch's own
  // code in the instruction cache (docs/guide/performance.md, "Per op").
  __attribute__((noinline)) void varint(uint64_t v) { len_ += putVarint(room(kMaxVarint), v); }
  void zigzag(int64_t v) { varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void f64(double v) { raw(&v, sizeof v); }
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void str(std::string_view s) {
    varint(s.size());
    raw(s.data(), s.size());
  }
  void raw(const void* p, size_t n) {
    if (n == 0) return;
    std::memcpy(room(n), p, n);
    len_ += n;
  }
  // Room for `n` more bytes at once, for a run of fields whose sizes add up
  // to at most `n` written through a FieldCursor (no check per field), then
  // handed back with commit(). The recorder encodes a record per op: a
  // tensor's twenty-odd fields each through varint() cost a call and a
  // check apiece (docs/guide/performance.md, "Per op").
  char* reserve(size_t n) { return room(n); }
  void commit(const char* end) { len_ = static_cast<size_t>(end - out_.data()); }
  size_t size() const { return len_; }
  // What was written from the start of `out`, without trimming it.
  std::string_view view() const { return std::string_view(out_.data(), len_); }
  // Trims `out` to what was written.
  void finish() {
    if (out_.size() != len_) out_.resize(len_);
  }

 private:
  char* room(size_t n) {
    if (__builtin_expect(out_.size() - len_ < n, 0)) grow(n);
    return out_.data() + len_;
  }
  // Out of line and cold: see varint().
  __attribute__((noinline, cold)) void grow(size_t n) { out_.resize(std::max(out_.size() * 2, len_ + n + 64)); }

  std::string& out_;
  size_t len_;
};

// Writes fields at a pointer into room a ByteWriter reserved: the caller
// bounds their sizes (kMaxVarint per varint).
struct FieldCursor {
  char* p;
  void u8(uint8_t v) { *p++ = static_cast<char>(v); }
  // One byte inline, the rest out of line: most fields are small numbers,
  // and the loop inlined into each field grew the encoder (see ByteWriter).
  void varint(uint64_t v) {
    if (__builtin_expect(v < 0x80, 1)) {
      *p++ = static_cast<char>(v);
    } else {
      p = longVarint(p, v);
    }
  }
  __attribute__((noinline)) static char* longVarint(char* p, uint64_t v) { return p + putVarint(p, v); }
  void zigzag(int64_t v) { varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void f64(double v) { raw(&v, sizeof v); }
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void raw(const void* q, size_t n) {
    std::memcpy(p, q, n);
    p += n;
  }
  // At most kMaxVarint + s.size() bytes.
  void str(std::string_view s) {
    varint(s.size());
    raw(s.data(), s.size());
  }
};

class ByteReader {
 public:
  ByteReader(const char* p, size_t n) : p_(p), end_(p + n) {}
  explicit ByteReader(std::string_view s) : ByteReader(s.data(), s.size()) {}

  uint8_t u8() {
    need(1);
    return static_cast<uint8_t>(*p_++);
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b = u8();
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    throw FormatError("varint longer than 10 bytes");
  }
  int64_t zigzag() {
    uint64_t v = varint();
    return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }
  double f64() {
    double v;
    copy(&v, sizeof v);
    return v;
  }
  uint64_t u64() {
    uint64_t v;
    copy(&v, sizeof v);
    return v;
  }
  std::string str() { return std::string(view(varint())); }
  std::string_view view(uint64_t n) {
    need(n);
    std::string_view v(p_, n);
    p_ += n;
    return v;
  }
  bool done() const { return p_ == end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }

 private:
  void need(uint64_t n) const {
    if (n > remaining()) throw FormatError("record ends early");
  }
  void copy(void* dst, size_t n) {
    need(n);
    std::memcpy(dst, p_, n);
    p_ += n;
  }
  const char* p_;
  const char* end_;
};

}  // namespace acc::format
