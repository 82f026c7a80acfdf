// Pass 1 of compare: each rank's records without tensor data, for alignment.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analyzer/compare/align.h"
#include "analyzer/recording.h"

namespace acc::analyzer {

struct ScannedRank {
  RankRecording rank;
  std::vector<RecordMeta> records;  // execution order
  std::map<uint64_t, format::StackRecord> stacks;
  bool readable = true;             // false: records.acc could not be opened
};

// Reads every rank of one recording; damage is appended to `problems`.
// Throws InputError when `dir` holds no recording.
std::vector<ScannedRank> scanRecording(const std::string& dir, std::vector<std::string>& problems);

// Both recordings, every rank file on its own thread. `tick(scanned,
// expected)` is called from the calling thread about every 100 ms.
void scanRecordings(const std::string& dir0, const std::string& dir1, std::vector<ScannedRank>& side0,
                    std::vector<ScannedRank>& side1, std::vector<std::string>& problems,
                    const std::function<void(uint64_t, uint64_t)>& tick = nullptr);

}  // namespace acc::analyzer
