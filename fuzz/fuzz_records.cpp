// records.acc as the analyzer reads it: frames found, checked and
// decompressed (record and data frames, resync after damage), records
// decoded with their data and content references resolved. Whatever the
// bytes, the reader reports damage or throws InputError; it never crashes.
#include <cstddef>
#include <cstdint>

#include "analyzer/read/recording.h"
#include "format/bytes.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file = (acc::fuzz::scratch() / "records.acc").string();
  acc::fuzz::writeFile(file, data, size);
  try {
    acc::analyzer::forEachRecord(file, [](const acc::analyzer::RawRecord& raw) {
      try {
        if (raw.kind == acc::format::RecordKind::Op) {
          acc::format::OpRecord r = raw.decodeOp(/*with_data=*/true);
          raw.loadData(r);
        } else if (raw.kind == acc::format::RecordKind::Stack) {
          acc::format::decodeStack(raw.body);
        }
      } catch (const acc::format::FormatError&) {
      }
    });
  } catch (const acc::analyzer::InputError&) {
  } catch (const acc::format::FormatError&) {
  }
  return 0;
}
