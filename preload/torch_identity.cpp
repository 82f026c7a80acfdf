#include "preload/torch_identity.h"

#include <elf.h>
#include <link.h>

#include <cstring>
#include <fstream>

namespace acc::preload {
namespace {

constexpr const char* kTorchLibrary = "libtorch_cpu.so";

std::string hex(const unsigned char* bytes, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

std::string buildIdOf(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    const unsigned char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const unsigned char* name = p + sizeof(ElfW(Nhdr));
      const unsigned char* desc = name + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0 && desc + note->n_descsz <= end) {
        return hex(desc, note->n_descsz);
      }
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return "";
}

// 1.13 from libtorch_cpu.so.1.13, or the __version__ of a wheel's version.py
// (torch/lib/libtorch_cpu.so -> torch/version.py).
std::string versionOf(const std::string& library) {
  size_t slash = library.rfind('/');
  std::string dir = slash == std::string::npos ? "." : library.substr(0, slash);
  std::ifstream py(dir + "/../version.py");
  std::string line;
  while (std::getline(py, line)) {
    if (line.rfind("__version__", 0) != 0) continue;
    size_t q1 = line.find_first_of("'\"");
    size_t q2 = q1 == std::string::npos ? q1 : line.find(line[q1], q1 + 1);
    if (q2 != std::string::npos) return line.substr(q1 + 1, q2 - q1 - 1);
  }
  size_t so = library.rfind(".so.");
  return so == std::string::npos ? "unknown" : library.substr(so + 4);
}

}  // namespace

std::optional<TorchIdentity> loadedTorch() {
  std::optional<TorchIdentity> found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        const char* path = info->dlpi_name;
        if (path == nullptr) return 0;
        const char* base = std::strrchr(path, '/');
        base = base == nullptr ? path : base + 1;
        if (std::strncmp(base, kTorchLibrary, std::strlen(kTorchLibrary)) != 0) return 0;
        auto* out = static_cast<std::optional<TorchIdentity>*>(data);
        *out = TorchIdentity{path, buildIdOf(info), versionOf(path)};
        return 1;
      },
      &found);
  return found;
}

std::optional<TorchIdentity> readBuiltFor(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  TorchIdentity id;
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "library") id.library = value;
    else if (key == "build_id") id.build_id = value;
    else if (key == "version") id.version = value;
  }
  return id;
}

bool sameTorch(const TorchIdentity& running, const TorchIdentity& built) {
  if (!running.build_id.empty() && !built.build_id.empty()) return running.build_id == built.build_id;
  return running.version == built.version;
}

}  // namespace acc::preload
