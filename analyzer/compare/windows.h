// Alignment a window at a time. compare reads both recordings' metadata as
// streams (analyzer/compare/meta_stream.h) and aligns them window by
// window: a window holds whole steps, as many as fit in `max_records` a
// side, so each step is aligned as a whole (alignRank) and memory is bounded
// by the window, not by the run. A step longer than a window is aligned in
// chunks; the records a chunk leaves unpaired after its last pair are
// carried into the next chunk (an extra op near a chunk's end still finds
// its partners after it).
//
// Records arrive in file order, which is about execution order: an op
// finishing after a later op started is written after it. A step is taken
// once each side has read `lag` records of later steps (or its end), so such
// stragglers still join their step.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/compare/align.h"
#include "analyzer/compare/meta_stream.h"

namespace acc::analyzer {

struct AlignedWindow {
  // Its records of each side, execution order. A chunk's records carried
  // into the next window are here and there again; they are settled (in
  // `pairs` or `only`) by the window that pairs or gives them up.
  std::vector<RecordMeta> m0, m1;
  std::vector<uint64_t> ordinal0, ordinal1;  // their MetaItem::ordinal
  std::vector<AlignedPair> pairs;            // selected pairs (--op), DIR0's execution order
  std::vector<uint32_t> only0, only1;        // selected records without a partner
  std::vector<std::string> notes;            // alignRank's
  uint64_t first_pair = 0;                   // position of pairs[0] among the rank pair's pairs
  // Every record of side s whose ordinal is below decided[s] is settled by
  // this window or an earlier one (paired, unmatched or not selected).
  uint64_t decided[2] = {0, 0};
};

class WindowAligner {
 public:
  using Source = std::function<bool(MetaItem&)>;  // the next record in file order; false at the end
  struct Limits {
    size_t max_records = size_t(1) << 14;  // a window's records a side (1.3 MB of metadata)
    size_t lag = 4096;
    size_t max_cells = size_t(64) << 20;   // alignRank's
  };

  WindowAligner(Source side0, Source side1, std::vector<std::string> op_list, Limits limits);
  WindowAligner(Source side0, Source side1, std::vector<std::string> op_list)
      : WindowAligner(std::move(side0), std::move(side1), std::move(op_list), Limits()) {}

  // The next window, nullptr after the last one.
  std::shared_ptr<AlignedWindow> next();

 private:
  struct Side {
    Source source;
    bool end = false;
    std::map<int64_t, std::vector<MetaItem>> steps;  // read, not yet in a window; file order
    size_t pending = 0;
    uint64_t read_to = 0;  // one past the last ordinal read
  };
  void fill(Side& s);
  size_t laterThan(const Side& s, int64_t step) const;
  bool complete(const Side& s, int64_t step) const;
  uint64_t decided(const Side& s) const;

  Side sides_[2];
  std::vector<std::string> op_list_;
  Limits limits_;
  uint64_t pairs_ = 0;
};

}  // namespace acc::analyzer
