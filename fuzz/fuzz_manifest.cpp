// manifest.json as list reads it (every field it prints, the notes of what
// was lost) beside a records file with a header and no frame: any JSON, of
// any shape, is reported or printed, never a crash (a field of the wrong
// type must not throw out of the command).
#include <cstddef>
#include <cstdint>

#include "analyzer/cli/commands.h"
#include "analyzer/read/recording_notes.h"
#include "format/frame.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path rank = acc::fuzz::scratch() / "manifest" / "rank0";
  static const bool ready = [&] {
    const std::string header = acc::format::fileHeader();
    acc::fuzz::writeFile(rank / "records.acc", reinterpret_cast<const uint8_t*>(header.data()), header.size());
    return true;
  }();
  (void)ready;
  acc::fuzz::writeFile(rank / "manifest.json", data, size);
  acc::analyzer::listCommand({rank.parent_path().string()});
  return 0;
}
