// compareRecordings(): the whole comparison of two recordings, without the
// reports. Each records file is read twice at once: its metadata a window
// of steps ahead (aligned window by window), and its data behind (metrics),
// the judged rows spilled to disk as they come, so tensor data held stay
// within `memory_budget`, metadata within a few windows and rows on disk,
// whatever the length of the recordings.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "analyzer/compare/align.h"
#include "analyzer/common/result.h"
#include "analyzer/judge/thresholds.h"

namespace acc::analyzer {

struct CompareProgress {
  const char* action = "comparing";          // the verb on the progress line
  // Matched records compared, of about how many (the manifests' counts, or
  // the pairs aligned so far when more).
  uint64_t pairs_done = 0, pairs_total = 0;
  // Tensor data of both sides compared, and of how many when known
  // (0: the fraction done counts records).
  uint64_t bytes_done = 0, bytes_total = 0;
  double seconds = 0;                        // since the start
  bool writing = false;                      // then the reports: pairs_done of pairs_total written
};

struct CompareOptions {
  std::string dir0, dir1;  // DIR0: reference, DIR1: device under test
  Thresholds thresholds = defaultThresholds();
  std::vector<std::string> op_list;  // compare only ops containing one of these (case-insensitive)
  // --ranks: compare only these ranks (empty: every rank), so that the ranks
  // of a large job can be compared in separate processes.
  std::vector<int64_t> ranks;
  unsigned threads = 0;               // metric workers; 0: one per core
  uint64_t memory_budget = uint64_t(512) << 20;  // tensor bytes held at once (soft)
  // Replay (docs/METRICS.md, "Replay"): candidate origins of level-2
  // comparisons are run again on both sides' recorded inputs by acc-replay
  // workers (`replay_binary`, "" when absent) and kept only when confirmed.
  bool replay = true;
  std::string replay_binary;
  size_t replay_limit = 1000;  // candidates per rank
  // Where the judged rows are spilled while the comparison runs ($TMPDIR
  // when empty); removed with the result.
  std::string spill_dir;
  // Called from the calling thread about ten times a second while the
  // tensor data are compared.
  std::function<void(const CompareProgress&)> progress;
};

// Throws InputError (analyzer/read/recording.h) when DIR0 or DIR1 holds no
// recording; damage inside a recording is reported in result.problems and
// the readable records are compared.
CompareResult compareRecordings(const CompareOptions& options);

// The comparison of two matched records before their tensors are compared:
// names (DIR1's when it differs), op, pass, step, rank, indices.
RecordComparison describePair(const RecordMeta& a, const RecordMeta& b, int64_t rank);

// True when `op_list` is empty or one of its entries is a case-insensitive
// substring of the record's op, name or autograd node.
bool opSelected(const std::vector<std::string>& op_list, const std::string& op, const std::string& name,
                const std::string& grad_fn);

}  // namespace acc::analyzer
