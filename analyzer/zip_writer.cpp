#include "analyzer/zip_writer.h"

#include <cstdint>
#include <array>
#include <stdexcept>

namespace acc::analyzer {
namespace {

constexpr uint64_t kMaxSize = 0xFFFFFFFFull;
constexpr uint16_t kVersion = 20;   // 2.0: the oldest that readers all accept
constexpr uint16_t kDosTime = 0;    // 00:00:00
constexpr uint16_t kDosDate = 0x21; // 1980-01-01: fixed, so reports are reproducible

std::array<uint32_t, 256> makeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

void put16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xFF));
  out.push_back(static_cast<char>(v >> 8));
}

void put32(std::string& out, uint32_t v) {
  put16(out, static_cast<uint16_t>(v & 0xFFFF));
  put16(out, static_cast<uint16_t>(v >> 16));
}

}  // namespace

uint32_t crc32(std::string_view data, uint32_t crc) {
  static const std::array<uint32_t, 256> table = makeTable();
  crc = ~crc;
  for (unsigned char b : data) crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

ZipWriter::ZipWriter(const std::string& path) : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
  if (!out_) throw std::runtime_error(path + ": cannot create file");
}

void ZipWriter::check() {
  if (!out_) throw std::runtime_error(path_ + ": write error");
}

void ZipWriter::add(const std::string& name, std::string_view content) {
  if (content.size() >= kMaxSize || offset_ + content.size() + name.size() + 30 >= kMaxSize) {
    throw std::runtime_error(path_ + ": " + name + " is too large for a zip archive without ZIP64");
  }
  Entry e{name, crc32(content), static_cast<uint32_t>(content.size()), static_cast<uint32_t>(offset_)};
  std::string header;
  put32(header, 0x04034b50);  // local file header
  put16(header, kVersion);
  put16(header, 0);           // flags
  put16(header, 0);           // method: stored
  put16(header, kDosTime);
  put16(header, kDosDate);
  put32(header, e.crc);
  put32(header, e.size);      // compressed size
  put32(header, e.size);      // uncompressed size
  put16(header, static_cast<uint16_t>(name.size()));
  put16(header, 0);           // extra length
  header += name;
  out_.write(header.data(), static_cast<std::streamsize>(header.size()));
  out_.write(content.data(), static_cast<std::streamsize>(content.size()));
  check();
  offset_ += header.size() + content.size();
  entries_.push_back(std::move(e));
}

void ZipWriter::finish() {
  std::string dir;
  for (const Entry& e : entries_) {
    put32(dir, 0x02014b50);  // central directory header
    put16(dir, kVersion);    // made by
    put16(dir, kVersion);    // needed
    put16(dir, 0);
    put16(dir, 0);
    put16(dir, kDosTime);
    put16(dir, kDosDate);
    put32(dir, e.crc);
    put32(dir, e.size);
    put32(dir, e.size);
    put16(dir, static_cast<uint16_t>(e.name.size()));
    put16(dir, 0);  // extra
    put16(dir, 0);  // comment
    put16(dir, 0);  // disk
    put16(dir, 0);  // internal attributes
    put32(dir, 0);  // external attributes
    put32(dir, e.offset);
    dir += e.name;
  }
  if (entries_.size() > 0xFFFF || offset_ + dir.size() >= kMaxSize) {
    throw std::runtime_error(path_ + ": too large for a zip archive without ZIP64");
  }
  const auto dir_size = static_cast<uint32_t>(dir.size());
  put32(dir, 0x06054b50);  // end of central directory
  put16(dir, 0);           // this disk
  put16(dir, 0);           // disk of the directory
  put16(dir, static_cast<uint16_t>(entries_.size()));
  put16(dir, static_cast<uint16_t>(entries_.size()));
  put32(dir, dir_size);
  put32(dir, static_cast<uint32_t>(offset_));
  put16(dir, 0);  // comment length
  out_.write(dir.data(), static_cast<std::streamsize>(dir.size()));
  out_.close();
  if (out_.fail()) throw std::runtime_error(path_ + ": write error");
}

}  // namespace acc::analyzer
