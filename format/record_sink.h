// The frames of a records file (records.acc, random.acc): encoded records go
// into record frames; an op record's tensor bytes go into data frames,
// written before the frame of the record that refers to them, so a crash
// never leaves a record whose bytes are not on disk. Single-threaded: the
// recorder's writer thread drives one (recorder/write/writer.h), and the analyzer
// one when it writes a recording itself (an msprobe dump read as one).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "format/data_frame_pipeline.h"
#include "format/direct_file.h"
#include "format/frame.h"

namespace acc::format {

class RecordSink {
 public:
  // Writes to `fd`, which already holds the file header (fileHeader()).
  // `data_threads` > 1: data frames are compressed on that many threads,
  // this one included (data_frame_pipeline.h), started at the first.
  RecordSink(int fd, int zstd_level, int data_zstd_level, size_t frame_bytes, int data_threads = 1);
  ~RecordSink();
  RecordSink(const RecordSink&) = delete;
  RecordSink& operator=(const RecordSink&) = delete;

  // From now on frames go to `fd` through a DirectFile (direct_file.h),
  // O_DIRECT where the filesystem takes it; the file holds `written`. Before
  // the first frame.
  void writeDirect(std::string_view written);

  // One item: encode() output, for an op record followed by its
  // appendData() bytes, and then `more` of its bytes, in tensor order (the
  // recorder holds level 2's bytes apart: no copy into the item). Data
  // frames may be written at once.
  void add(std::string_view item, const std::vector<std::string_view>& more = {});
  // `count` op records without tensor bytes, encode() output one after
  // another (a recorder thread's batch).
  void addRecords(std::string_view records, uint64_t count) {
    payload_.append(records);
    payload_records_ += count;
  }
  // Bytes of records waiting for the next record frame.
  size_t pending() const { return payload_.size(); }

  // Writes the pending data and the record frame. `records` and `others`:
  // how many op records and other records (stacks) it held; `ok` false when
  // it was not written (this or an earlier write failed: error()).
  struct Flushed {
    uint64_t records = 0, others = 0;
    bool ok = true;
  };
  Flushed flush();

  const std::string& error() const { return error_; }  // the first I/O or encoding error
  uint64_t frames() const { return frames_; }
  bool directIo() const { return file_ && file_->direct(); }  // so far, through O_DIRECT
  uint64_t bytes() const { return bytes_; }

 private:
  void addData(std::string_view data);
  void flushData(std::string_view data);
  void writeFinishedData();
  bool writeFrame(const std::string& frame);
  bool syncFile();

  int fd_;
  const size_t frame_bytes_;
  std::unique_ptr<FrameEncoder> encoder_, data_encoder_;
  const int data_zstd_level_;
  int data_threads_;
  std::unique_ptr<DataFramePipeline> pipeline_;  // data_threads_ > 1, from the first data frame
  std::unique_ptr<DirectFile> file_;             // writeDirect(); else plain writes
  std::string payload_;  // records not yet in a frame
  uint64_t payload_records_ = 0, payload_others_ = 0;
  std::string data_payload_;  // the data stream not yet in a frame
  uint64_t data_offset_ = 0;  // stream offset of data_payload_
  std::string frame_;
  std::string error_;
  uint64_t frames_ = 0, bytes_ = 0;
};

// Whether an encoded item starts with an op record (not a stack record).
bool isOpRecord(std::string_view item);

// Writes all of `data` to `fd`; 0 or the errno that stopped it.
int writeAll(int fd, const char* data, size_t size);

}  // namespace acc::format
