// Content references (format v4) resolved while a file is read in order: the
// first tensor with a content id holds the statistics and the place of the
// bytes in the data stream, later tensors with that id refer to it. The
// recorder queues a defining record before any record referring to it, so
// one pass in file order resolves every reference.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "format/record.h"

namespace acc::analyzer {

class ContentTable {
 public:
  // Remembers the contents `r` defines and fills its references, in tensor
  // order (a tensor may refer to an earlier one of the same record). Returns
  // the references whose content is unknown (its record was lost): they
  // keep their metadata only.
  uint64_t resolve(format::OpRecord& r);

 private:
  struct Content {
    bool has_stats = false, has_data = false, data_in_stream = false;
    format::Stats stats;
    uint64_t data_offset = 0, data_size = 0;
  };
  std::unordered_map<uint64_t, Content> contents_;
};

}  // namespace acc::analyzer
