// Little-endian varint byte streams: the building block of every record.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace acc::format {

struct FormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ByteWriter {
 public:
  explicit ByteWriter(std::string& out) : out_(out) {}

  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void zigzag(int64_t v) { varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void f64(double v) { raw(&v, sizeof v); }
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void str(std::string_view s) {
    varint(s.size());
    out_.append(s.data(), s.size());
  }
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  size_t size() const { return out_.size(); }

 private:
  std::string& out_;
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
