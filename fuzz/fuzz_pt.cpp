// A tensor dump's .pt file (a zip holding a pickle and the storage's bytes),
// read without torch: anything but one tensor is refused with PtError.
#include <cstddef>
#include <cstdint>

#include "analyzer/msprobe/pt_file.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path file = acc::fuzz::scratch() / "tensor.pt";
  acc::fuzz::writeFile(file, data, size);
  try {
    acc::analyzer::msprobe::readPt(file.string());
  } catch (const acc::analyzer::msprobe::PtError&) {
  }
  return 0;
}
