// compare's judged records, spilled to disk as they are judged so that a
// comparison's memory stays bounded whatever the number of records (a long
// run has millions). Each rank pair writes a part of its own, in execution
// order; the spill is read back part after part, in rank order, as often
// as the reports need. A part is a temporary file of zstd frames
// (format/frame.h) of length-prefixed records, removed with the spill.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/common/result.h"

namespace acc::analyzer {

// One record's bytes, and back (the spill's encoding). compare keeps its
// spill in its report directory for merge (saved_result.h), read back by
// the same acc-analyzer: kRowsVersion must change whenever this encoding
// does, so that merge refuses rows another version wrote.
inline constexpr int kRowsVersion = 1;
void encodeRecord(const RecordComparison& r, std::string& out);
RecordComparison decodeRecord(std::string_view bytes);

class RecordSpill {
 public:
  // One rank pair's records, written by one thread.
  class Part {
   public:
    void append(const RecordComparison& r);
    // Writes what is buffered; throws std::runtime_error on a write error.
    void close();
    uint64_t size() const { return count_; }
    uint64_t bytes() const { return bytes_; }

   private:
    friend class RecordSpill;
    explicit Part(std::string path);
    Part(std::string path, uint64_t count, uint64_t bytes);  // adopted: already written
    void flush();
    std::string path_;
    int fd_ = -1;
    bool keep_ = false;  // a file that outlives the spill
    std::string payload_, frame_;
    uint64_t count_ = 0, bytes_ = 0;
  };

  // Parts go to temporary files under `dir` ($TMPDIR when empty).
  explicit RecordSpill(std::string dir = "");
  ~RecordSpill();
  RecordSpill(const RecordSpill&) = delete;
  RecordSpill& operator=(const RecordSpill&) = delete;

  // A new part, after the ones made before (their order is the read order).
  Part& addPart();
  // A new part written to `path`, which the spill leaves in place.
  Part& addFile(const std::string& path);
  // A part file written before, of `count` records and `bytes` on disk,
  // read after the ones before it; left in place.
  void adopt(const std::string& path, uint64_t count, uint64_t bytes);
  struct PartFile {
    std::string path;
    uint64_t count = 0, bytes = 0;
  };
  std::vector<PartFile> files() const;  // the parts, closed, in read order
  uint64_t size() const;
  uint64_t bytes() const;  // compressed, on disk
  // Calls `f` with every record in order; throws std::runtime_error when a
  // part cannot be read back.
  void forEach(const std::function<void(RecordComparison&)>& f) const;

 private:
  std::string dir_;
  std::vector<std::unique_ptr<Part>> parts_;
};

}  // namespace acc::analyzer
