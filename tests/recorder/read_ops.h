// What the recorder's writer wrote, read back for its tests: each op record
// of a records file in file order, decoded without its tensor bytes (the
// caller reads them through `reader`).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "format/frame.h"
#include "format/record.h"

namespace acc::recorder {

template <typename F>
void forEachOp(format::FrameReader& reader, F&& f) {
  std::string payload;
  while (reader.next(payload)) {
    format::RecordCursor cursor(payload);
    format::RecordKind kind;
    std::string_view body;
    while (cursor.next(kind, body)) {
      EXPECT_EQ(kind, format::RecordKind::Op);
      f(format::decodeOp(body, /*with_data=*/false, cursor.dataOffset()));
    }
  }
}

}  // namespace acc::recorder
