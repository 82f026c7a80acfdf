// What the fuzz targets share: a scratch folder of their own (in /dev/shm
// when there is one, so that writing each input costs no disk), files
// written from the input, and the analyzer's own output kept off the
// terminal (libFuzzer's lines are what matter).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace acc::fuzz {

inline const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    std::error_code ec;
    std::filesystem::path base = std::filesystem::is_directory("/dev/shm", ec) ? "/dev/shm" : "/tmp";
    std::filesystem::path d = base / ("acc-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d, ec);
    // stdout to /dev/null: list and import print what they read.
    if (std::freopen("/dev/null", "w", stdout) == nullptr) std::perror("freopen");
    return d;
  }();
  return dir;
}

inline void writeFile(const std::filesystem::path& path, const uint8_t* data, size_t size) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace acc::fuzz
