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

// One record's bytes, and back (the spill's encoding; no file format
// promise: it never outlives the process).
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
    void flush();
    std::string path_;
    int fd_ = -1;
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
