// An msprobe dump.json (statistics task) imported as acc imports the dumps
// users hand it: entries of any shape are read, skipped and counted, or the
// file is refused with InputError; never a crash.
#include <cstddef>
#include <cstdint>

#include "analyzer/msprobe/import.h"
#include "analyzer/read/recording.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path dump = acc::fuzz::scratch() / "msprobe" / "step0" / "rank0";
  acc::fuzz::writeFile(dump / "dump.json", data, size);
  try {
    acc::analyzer::msprobe::importDump((acc::fuzz::scratch() / "msprobe").string(),
                                       (acc::fuzz::scratch() / "imported").string());
  } catch (const acc::analyzer::InputError&) {
  }
  return 0;
}
