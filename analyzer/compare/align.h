// Alignment of two recordings' records, rank by rank and step by step: by
// name where the op sequences agree, by a weighted sequence alignment on
// (op, pass, shapes) where they differ (an extra, missing or fused op), so
// one difference does not unpair everything after it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "analyzer/common/interned.h"
#include "format/record.h"

namespace acc::analyzer {

// What alignment (and later reporting) needs of a record: no tensor data,
// its strings interned (compare holds one per record of the windows it is
// aligning and comparing: analyzer/compare/windows.h).
// Fields ordered for size: 72 bytes.
struct RecordMeta {
  uint64_t index = 0;
  Interned name, op, grad_fn, forward_name;
  Interned module;  // format 5: the nn.Module path
  bool has_module = false;
  format::Pass pass = format::Pass::Forward;
  bool off_cpu = false;    // a tensor on a device other than the CPU
  int64_t step = 0;
  uint64_t stack_id = 0;
  uint64_t op_key = 0;     // hash of (op, pass)
  uint64_t shape_key = 0;  // hash of every tensor's (role, position, item, shape)
  // The checksum of what it produced first (output 0; a backward node's
  // first gradient out), 0 when not recorded: what an unmatched record
  // hands to the record it feeds (compare's "fed by").
  uint64_t output_checksum = 0;
};

RecordMeta recordMeta(const format::OpRecord& r);

struct AlignedPair {
  uint32_t i0 = 0, i1 = 0;  // indices into the two rank's RecordMeta vectors
};

struct Alignment {
  std::vector<AlignedPair> pairs;       // in DIR0's execution order
  std::vector<uint32_t> only0, only1;   // records without a partner
  std::vector<std::string> notes;       // e.g. a step aligned within a band only
};

// `m0` and `m1` in execution order (sorted by index). `max_cells` bounds the
// memory of one step's alignment (one byte per cell).
Alignment alignRank(const std::vector<RecordMeta>& m0, const std::vector<RecordMeta>& m1,
                    size_t max_cells = size_t(64) << 20);

// Weighted longest common subsequence of two sequences of lengths n and m:
// score(i, j) > 0 when element i of the first may pair with element j of the
// second (higher is better), 0 when not. Cells outside a diagonal band are
// skipped when n * m exceeds max_cells. Returns the pairs in order; `banded`
// says whether the band was used.
std::vector<std::pair<uint32_t, uint32_t>> alignSequences(size_t n, size_t m,
                                                          const std::function<int(size_t, size_t)>& score,
                                                          size_t max_cells, bool* banded = nullptr);

}  // namespace acc::analyzer
