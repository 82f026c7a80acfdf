#include "format/record_sink.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "format/bytes.h"
#include "format/record.h"

namespace acc::format {
bool isOpRecord(std::string_view record) {
  RecordCursor cursor(record);
  RecordKind kind;
  std::string_view body;
  try {
    return cursor.next(kind, body) && kind == RecordKind::Op;
  } catch (const FormatError&) {
    return false;
  }
}

int writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

RecordSink::RecordSink(int fd, int zstd_level, int data_zstd_level, size_t frame_bytes, int data_threads)
    : fd_(fd),
      frame_bytes_(frame_bytes),
      encoder_(std::make_unique<FrameEncoder>(zstd_level)),
      data_encoder_(std::make_unique<FrameEncoder>(data_zstd_level)),
      data_zstd_level_(data_zstd_level),
      data_threads_(data_threads) {}

RecordSink::~RecordSink() = default;

// Records go to the record payload; an op's tensor bytes go to the data
// stream, and the record is wrapped with the offset they start at.
void RecordSink::add(std::string_view item, const std::vector<std::string_view>& more) {
  const bool op = isOpRecord(item);
  ++(op ? payload_records_ : payload_others_);
  std::string_view record = item, data;
  if (op) {
    try {
      splitRecord(item, record, data);
    } catch (const FormatError&) {
      record = item;  // isOpRecord() read its length: cannot happen
      data = {};
    }
  }
  bool any = !data.empty();
  for (std::string_view piece : more) any = any || !piece.empty();
  if (!op || !any) {
    payload_.append(record);
    return;
  }
  wrapWithDataOffset(record, data_offset_ + data_payload_.size(), payload_);
  addData(data);
  for (std::string_view piece : more) addData(piece);
}

void RecordSink::addData(std::string_view data) {
  while (!data.empty()) {
    if (data_payload_.empty() && data.size() >= frame_bytes_) {
      flushData(data.substr(0, frame_bytes_));  // whole frames straight from the item
      data.remove_prefix(frame_bytes_);
      continue;
    }
    const size_t n = std::min(frame_bytes_ - data_payload_.size(), data.size());
    data_payload_.append(data.data(), n);
    data.remove_prefix(n);
    if (data_payload_.size() >= frame_bytes_) {
      flushData(data_payload_);
      data_payload_.clear();
    }
  }
}

void RecordSink::flushData(std::string_view data) {
  if (data_threads_ > 1 && !pipeline_) {
    try {
      pipeline_ = std::make_unique<DataFramePipeline>(data_zstd_level_, data_threads_ - 1);
    } catch (const std::exception&) {
      data_threads_ = 1;  // no thread to be had: this one compresses, as it can
    }
  }
  if (pipeline_) {
    writeFinishedData();
    while (pipeline_->full()) {
      pipeline_->helpOrWait(*data_encoder_);
      writeFinishedData();
    }
    try {
      pipeline_->submit(data, data_offset_);
    } catch (const std::exception& e) {  // no memory for its slot: the frame is lost, as below
      if (error_.empty()) error_ = e.what();
    }
    data_offset_ += data.size();
    return;
  }
  try {
    data_encoder_->encodeData(data, data_offset_, frame_);
  } catch (const std::exception& e) {
    frame_.clear();
    if (error_.empty()) error_ = e.what();
  }
  data_offset_ += data.size();
  writeFrame(frame_);
}

// The pipeline's compressed frames, in stream order, as far as they are done.
void RecordSink::writeFinishedData() {
  pipeline_->takeFinished([this](const std::string& frame, const std::string& error) {
    if (!error.empty() && error_.empty()) error_ = error;
    writeFrame(frame);
  });
}

void RecordSink::writeDirect(std::string_view written) { file_ = std::make_unique<DirectFile>(fd_, written); }

// False when it or an earlier one failed.
bool RecordSink::writeFrame(const std::string& frame) {
  if (!error_.empty() || frame.empty()) return false;
  if (int err = file_ ? file_->append(frame.data(), frame.size()) : writeAll(fd_, frame.data(), frame.size())) {
    error_ = std::string("write failed: ") + std::strerror(err);
    return false;
  }
  frames_ += 1;
  bytes_ += frame.size();
  return true;
}

bool RecordSink::syncFile() {
  if (!file_ || !error_.empty()) return error_.empty();
  if (int err = file_->sync()) {
    error_ = std::string("write failed: ") + std::strerror(err);
    return false;
  }
  return true;
}

RecordSink::Flushed RecordSink::flush() {
  if (!data_payload_.empty()) {
    flushData(data_payload_);
    data_payload_.clear();
  }
  // Every data frame before the record frame that refers to it.
  while (pipeline_ && !pipeline_->empty()) {
    pipeline_->helpOrWait(*data_encoder_);
    writeFinishedData();
  }
  Flushed f{payload_records_, payload_others_, true};
  if (!payload_.empty()) {
    try {
      encoder_->encode(payload_, frame_);
    } catch (const std::exception& e) {
      frame_.clear();
      if (error_.empty()) error_ = e.what();
    }
    f.ok = writeFrame(frame_);
  }
  // What DirectFile stages reaches the file here: the records' frame with
  // the data before it.
  if (!syncFile()) f.ok = false;
  payload_.clear();
  payload_records_ = 0;
  payload_others_ = 0;
  return f;
}

}  // namespace acc::format
