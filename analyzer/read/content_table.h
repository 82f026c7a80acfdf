// Content references (format v4) resolved while a file is read in order: the
// first tensor with a content id holds the statistics and the place of the
// bytes in the data stream, later tensors with that id refer to it. The
// recorder queues a defining record before any record referring to it, so
// one pass in file order resolves every reference.
//
// A long run defines more than a content per record, and a reference may
// reach back to any of them (a frozen weight is defined once and read every
// step), so the table must not forget but must not grow in memory either.
// Content ids are numbered in order (1, 2, ...): the latest kRecent
// contents are kept in memory by id, older ones in a temporary file at
// their id's offset (one read for a reference that reaches back that far).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <unordered_map>
#include <vector>

#include "analyzer/read/recent_values.h"
#include "format/record.h"

namespace acc::analyzer {

class ContentTable {
 public:
  static constexpr size_t kRecent = size_t(1) << 14;

  ContentTable() = default;
  ~ContentTable();
  ContentTable(const ContentTable&) = delete;
  ContentTable& operator=(const ContentTable&) = delete;

  // Remembers the contents `r` defines and fills its references, in tensor
  // order (a tensor may refer to an earlier one of the same record). Returns
  // the references whose content is unknown (its record was lost): they
  // keep their metadata only.
  uint64_t resolve(format::OpRecord& r);

  // Where a content's bytes lie in the data stream, and the content they
  // are XOR'ed with (0: none; format v8) through which map (v9). False when
  // the content is unknown or has no bytes in the stream.
  struct DataPlace {
    uint64_t offset = 0, size = 0, delta_base = 0;
    format::Dtype dtype = format::Dtype::Unknown;
    format::DeltaMap delta_map = format::DeltaMap::None;
    double delta_scalar = 0;
  };
  bool dataPlace(uint64_t id, DataPlace& out);

  // The values of contents restored from deltas lately (format v8).
  RecentValues& recentValues() { return values_; }

  // Contents written to the file so far (tests).
  uint64_t spilled() const { return spilled_; }

 private:
  struct Content {
    uint64_t id = 0;  // 0: an empty slot
    format::Stats stats;
    uint64_t data_offset = 0, data_size = 0;
    uint64_t delta_base = 0;
    double delta_scalar = 0;
    format::Dtype dtype = format::Dtype::Unknown;
    format::DeltaMap delta_map = format::DeltaMap::None;
    bool has_stats = false, has_data = false, data_in_stream = false;
  };
  struct Free {
    void operator()(Content* p) const { std::free(p); }
  };
  void define(const Content& c);
  bool find(uint64_t id, Content& out);
  void spill(const Content& c);
  void flush();

  std::unique_ptr<Content[], Free> recent_;  // by id % kRecent, allocated at the first content
  int fd_ = -1;                              // the file of older contents, made when first needed
  bool no_file_ = false;                     // it could not be made or written: `overflow_` instead
  std::vector<Content> batch_;               // consecutive contents not yet written
  uint64_t written_end_ = 0;                 // one past the last id written
  uint64_t spilled_ = 0;
  std::unordered_map<uint64_t, Content> overflow_;
  RecentValues values_;
};

}  // namespace acc::analyzer
