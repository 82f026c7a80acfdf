// One frame's payload, past the frame's checksum (which keeps a fuzzer from
// reaching it through fuzz_records): the length-prefixed records walked and
// each decoded as an op or a stack record. Malformed bytes throw
// FormatError; nothing else may happen.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "format/bytes.h"
#include "format/record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  try {
    acc::format::RecordCursor cursor(payload);
    acc::format::RecordKind kind;
    std::string_view body;
    while (cursor.next(kind, body)) {
      try {
        if (kind == acc::format::RecordKind::Op) {
          acc::format::decodeOp(body, /*with_data=*/true, cursor.dataOffset());
        } else {
          acc::format::decodeStack(body);
        }
      } catch (const acc::format::FormatError&) {
      }
    }
  } catch (const acc::format::FormatError&) {
  }
  // The body alone, as either kind.
  for (int as_op = 0; as_op < 2; ++as_op) {
    try {
      if (as_op) {
        acc::format::decodeOp(payload, true, 0);
      } else {
        acc::format::decodeStack(payload);
      }
    } catch (const acc::format::FormatError&) {
    }
  }
  return 0;
}
