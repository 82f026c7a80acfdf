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

RecordSink::RecordSink(int fd, int zstd_level, int data_zstd_level, size_t frame_bytes)
    : fd_(fd),
      frame_bytes_(frame_bytes),
      encoder_(std::make_unique<FrameEncoder>(zstd_level)),
      data_encoder_(std::make_unique<FrameEncoder>(data_zstd_level)) {}

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
  try {
    data_encoder_->encodeData(data, data_offset_, frame_);
  } catch (const std::exception& e) {
    frame_.clear();
    if (error_.empty()) error_ = e.what();
  }
  data_offset_ += data.size();
  writeFrame();
}

// Writes frame_; false when it or an earlier one failed.
bool RecordSink::writeFrame() {
  if (!error_.empty() || frame_.empty()) return false;
  if (int err = writeAll(fd_, frame_.data(), frame_.size())) {
    error_ = std::string("write failed: ") + std::strerror(err);
    return false;
  }
  frames_ += 1;
  bytes_ += frame_.size();
  return true;
}

RecordSink::Flushed RecordSink::flush() {
  if (!data_payload_.empty()) {
    flushData(data_payload_);
    data_payload_.clear();
  }
  Flushed f{payload_records_, payload_others_, true};
  if (!payload_.empty()) {
    try {
      encoder_->encode(payload_, frame_);
    } catch (const std::exception& e) {
      frame_.clear();
      if (error_.empty()) error_ = e.what();
    }
    f.ok = writeFrame();
  }
  payload_.clear();
  payload_records_ = 0;
  payload_others_ = 0;
  return f;
}

}  // namespace acc::format
