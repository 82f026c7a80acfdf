// One rank's records without tensor data, read in file order on a thread of
// their own and handed out one at a time: what compare aligns a window at a
// time (analyzer/compare/windows.h), so that it never holds a whole run's
// metadata, however long the run.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "analyzer/compare/align.h"
#include "analyzer/read/recording.h"

namespace acc::analyzer {

struct MetaItem {
  RecordMeta meta;
  // Its place among the file's op records, counted as forEachRecord meets
  // them (damaged ones included): the data readers (stream.h) count the
  // same way, so the ordinal names the record for both readers.
  uint64_t ordinal = 0;
};

// A recording's call stacks by id, filled by its MetaStream as it reads and
// looked up meanwhile by the rows being judged (stack records come before
// the op records that refer to them).
class StackTable {
 public:
  void add(format::StackRecord&& stack);
  std::vector<std::string> frames(uint64_t id) const;  // empty when unknown

 private:
  mutable std::mutex mutex_;
  std::map<uint64_t, std::vector<std::string>> frames_;
};

class MetaStream {
 public:
  // Starts reading `rank`'s records.acc. When it cannot be opened,
  // readable() is false, problem() says why and next() returns false at
  // once.
  explicit MetaStream(const RankRecording& rank);
  ~MetaStream();  // stops the reading thread
  MetaStream(const MetaStream&) = delete;
  MetaStream& operator=(const MetaStream&) = delete;

  // The next record in file order; false after the last one.
  bool next(MetaItem& out);
  bool readable() const { return readable_; }
  uint64_t records() const { return records_.load(); }  // op records decoded so far
  // Damage met, "" when none; complete once next() returned false.
  std::string problem() const;
  const StackTable& stacks() const { return stacks_; }

 private:
  struct Stopped {};
  void readAll(const RankRecording& rank, const std::string& file);
  void handOver(std::vector<MetaItem>& batch);

  bool readable_ = true;
  std::atomic<uint64_t> records_{0};
  StackTable stacks_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::vector<MetaItem>> batches_;  // full batches, oldest first
  std::vector<MetaItem> current_;               // the batch next() takes from
  size_t taken_ = 0;                            // ... up to here
  bool done_ = false, stop_ = false;
  std::string problem_;
  std::thread thread_;
};

}  // namespace acc::analyzer
