// A minimal ZIP archive writer: stored (uncompressed) entries with CRC-32,
// enough for OOXML containers such as report.xlsx. No ZIP64: an archive and
// each entry must stay below 4 GiB.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace acc::analyzer {

// CRC-32 (IEEE 802.3, as zip and zlib.crc32); `crc` continues a running value.
uint32_t crc32(std::string_view data, uint32_t crc = 0);

class ZipWriter {
 public:
  // Throws std::runtime_error naming `path` when it cannot be created.
  explicit ZipWriter(const std::string& path);
  // Appends one entry; throws std::runtime_error on a write error.
  void add(const std::string& name, std::string_view content);
  // Writes the central directory and closes the file.
  void finish();

 private:
  struct Entry {
    std::string name;
    uint32_t crc = 0;
    uint32_t size = 0;
    uint32_t offset = 0;
  };
  void check();

  std::string path_;
  std::ofstream out_;
  uint64_t offset_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace acc::analyzer
