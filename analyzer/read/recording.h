// Opens recordings: a directory holding rank*/ subdirectories, or one rank
// directory (manifest.json + records.acc), and streams their records.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "format/frame.h"
#include "analyzer/read/content_table.h"
#include "format/record.h"

namespace acc::analyzer {

// A problem with the user's input: reported as one line, exit code 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RankRecording {
  std::string dir;
  int64_t rank = 0;
  nlohmann::json manifest;  // empty object when manifest.json is missing
};

// Throws InputError when `path` holds no recording.
std::vector<RankRecording> openRecording(const std::string& path);

// The rank's records file (DIR/records.acc).
std::string recordsFile(const RankRecording& rank);

struct ReadDamage {
  uint64_t corrupt_frames = 0;
  uint64_t corrupt_records = 0;
  uint64_t truncated_bytes = 0;
  uint64_t missing_data = 0;  // tensors whose recorded bytes could not be read
  uint64_t missing_contents = 0;  // references to contents whose record was lost (format v4)
  bool any() const { return corrupt_frames + corrupt_records + truncated_bytes + missing_data + missing_contents != 0; }
  std::string describe(const std::string& file) const;
};

// Decompresses whole data frames (each into its `out`), on whatever threads
// it likes; returns, per frame, whether it failed.
using FrameInflater = std::function<std::vector<char>(int fd, const std::vector<format::DeferredFrame>&)>;

// The FrameInflater that works on the calling thread.
std::vector<char> inflateOnThisThread(int fd, const std::vector<format::DeferredFrame>& frames);

// One record as forEachRecord meets it.
class RawRecord {
 public:
  RawRecord(format::RecordKind kind, std::string_view body, uint64_t data_offset, format::FrameReader& file,
            ReadDamage& damage, ContentTable& contents)
      : kind(kind), body(body), data_offset_(data_offset), file_(file), damage_(damage), contents_(contents) {}

  // Throws FormatError on a malformed body. Content references (format v4)
  // come resolved: they read as the tensors they refer to. `with_data` loads the tensor
  // bytes too (inline in format v1, from the data frames in v2); a tensor
  // whose bytes cannot be read keeps its statistics, loses has_data and is
  // counted in ReadDamage::missing_data. Slices of data frames are read
  // here; frames lying whole inside a tensor go to `inflate` (default: this
  // thread), straight into the tensor's buffer.
  format::OpRecord decodeOp(bool with_data, const FrameInflater& inflate = {}) const;

  // Loads the tensor bytes of `earlier`, a record of the same file met before
  // this one and decoded without data (its data frames are behind us).
  // Tensors whose bytes cannot be read lose has_data, as in decodeOp().
  void loadData(format::OpRecord& earlier) const;

  const format::RecordKind kind;
  const std::string_view body;
  bool decoded() const { return decoded_; }

 private:
  uint64_t data_offset_;
  format::FrameReader& file_;
  ReadDamage& damage_;
  ContentTable& contents_;
  mutable bool decoded_ = false;  // its contents are in contents_
};

struct ReadOptions {
  bool with_data = false;  // tensor bytes (level 2); metadata and stats otherwise
};

// Calls `visit` with every record of `file` (records.acc) in file order. A
// FormatError thrown by `visit` counts the record as corrupt; reading goes
// on. Throws InputError when the file cannot be opened as a recording.
ReadDamage forEachRecord(const std::string& file, const std::function<void(const RawRecord&)>& visit);

// Calls `on_op` for each op record in file order and collects stacks.
ReadDamage readRecords(const RankRecording& rank, const ReadOptions& options,
                       const std::function<void(format::OpRecord&&)>& on_op,
                       std::map<uint64_t, format::StackRecord>& stacks);

// The op records its manifest says were written (0: not said).
uint64_t expectedRecords(const RankRecording& rank);

// Op records of one rank sorted by index (execution order), without data.
std::vector<format::OpRecord> loadSorted(const RankRecording& rank,
                                         std::map<uint64_t, format::StackRecord>& stacks,
                                         ReadDamage& damage);

}  // namespace acc::analyzer
