// ACC_REFERENCE's view of the reference recording: one rank's records read
// in file order as the run under test asks for them, never all at once.
//
// Records are aligned within a step by what they are: their op, pass and
// tensor shapes (role, position, item and shape of each), and how many
// records alike came before them in the step. An extra or missing op then
// unpairs only records of its own kind (record names are numbered by a
// step's forward ops: one extra op renames every op after it), and the
// dtypes may differ (a bfloat16 run against a float32 reference).
//
// The reader keeps the records it has read and not yet been asked for, by
// step, and reads on only as far as the run under test has come: up to two
// steps beyond the one asked for (a device writes a step's last records
// while the next step runs). A record the run under test lacks is forgotten
// once the run is two steps past it; one the reference lacks is not found.
// Memory is what the reference holds for about three steps, at most
// kMaxWindow records.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "analyzer/read/content_table.h"
#include "format/bytes.h"
#include "format/frame.h"
#include "format/record.h"

namespace acc::recorder {

// What a record is, for alignment: a hash of its op, pass and tensors'
// roles, positions, items and shapes.
uint64_t alignmentSignature(const format::OpRecord& r);

class ReferenceReader {
 public:
  static constexpr size_t kMaxWindow = size_t(1) << 20;

  // `file`: the rank's records.acc. Throws format::FormatError when it
  // cannot be read as a recording.
  explicit ReferenceReader(const std::string& file);

  // The reference's counterpart of `r`, a record of the run under test
  // asked for in the order it was made: its content references resolved
  // (statistics, no tensor bytes), or null. Valid until the next call.
  const format::OpRecord* find(const format::OpRecord& r);

  uint64_t recordsRead() const { return read_; }
  // Reference records never asked for (the run under test made no record of
  // that name in that step), counted once forgotten or at the end.
  uint64_t unasked() const { return unasked_ + window_size_; }
  // Records and frames of the reference that could not be read.
  uint64_t corrupt() const { return corrupt_ + file_.corruptFrames(); }
  bool ended() const { return ended_; }

 private:
  struct Step {
    std::unordered_map<uint64_t, format::OpRecord> records;  // by key
    std::unordered_map<uint64_t, uint64_t> read, asked;       // records of each signature so far
  };
  bool readNext();  // one more op record into window_; false at the end
  void forgetBefore(int64_t step);

  format::FrameReader file_;
  std::string payload_;
  std::optional<format::RecordCursor> cursor_;  // over payload_
  analyzer::ContentTable contents_;
  std::map<int64_t, Step> window_;
  size_t window_size_ = 0;
  int64_t last_step_ = INT64_MIN;  // the latest step read
  bool ended_ = false;
  format::OpRecord found_;  // what find() returned last
  uint64_t read_ = 0, unasked_ = 0, corrupt_ = 0;
};

}  // namespace acc::recorder
