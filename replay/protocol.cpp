#include "replay/protocol.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "format/bytes.h"

namespace acc::replay {
namespace {

void putRecord(const format::OpRecord& r, format::ByteWriter& w) {
  std::string item;
  format::encode(r, item);
  format::appendData(r, item);
  w.str(item);
}

format::OpRecord getRecord(format::ByteReader& r) {
  const std::string_view item = r.view(r.varint());
  std::string_view record, data;
  format::splitRecord(item, record, data);
  format::RecordCursor cursor(record);
  format::RecordKind kind;
  std::string_view body;
  if (!cursor.next(kind, body) || kind != format::RecordKind::Op) throw format::FormatError("not an op record");
  format::OpRecord op = format::decodeOp(body, true, 0);
  for (format::Tensor& t : op.tensors) {
    if (!t.data_in_stream) continue;
    if (t.data_offset + t.data_size > data.size()) throw format::FormatError("tensor data ends early");
    t.data.assign(data.substr(t.data_offset, t.data_size));
    t.data_in_stream = false;
  }
  return op;
}

}  // namespace

const char* statusName(Status s) {
  switch (s) {
    case Status::Replayed: return "replayed";
    case Status::NotReplayable: return "not replayable";
    case Status::Failed: return "failed";
  }
  return "?";
}

std::string encodeRequest(const Request& r) {
  std::string out;
  format::ByteWriter w(out);
  w.varint(r.records.size());
  for (const format::OpRecord& op : r.records) putRecord(op, w);
  w.u8(r.reduced_mantissa);
  w.finish();
  return out;
}

Request decodeRequest(std::string_view bytes) {
  format::ByteReader r(bytes);
  Request req;
  const uint64_t n = r.varint();
  for (uint64_t i = 0; i < n; ++i) req.records.push_back(getRecord(r));
  req.reduced_mantissa = r.u8();
  return req;
}

std::string encodeOutcome(const Outcome& o) {
  std::string out;
  format::ByteWriter w(out);
  w.u8(static_cast<uint8_t>(o.status));
  w.str(o.reason);
  w.u8(static_cast<uint8_t>((o.has_same_dtype ? 1 : 0) | (o.has_float64 ? 2 : 0) | (o.has_reduced ? 4 : 0)));
  if (o.has_same_dtype) putRecord(o.same_dtype, w);
  if (o.has_float64) putRecord(o.float64, w);
  if (o.has_reduced) putRecord(o.reduced, w);
  w.str(o.float64_error);
  w.finish();
  return out;
}

Outcome decodeOutcome(std::string_view bytes) {
  format::ByteReader r(bytes);
  Outcome o;
  const uint8_t status = r.u8();
  if (status > static_cast<uint8_t>(Status::Failed)) throw format::FormatError("unknown replay status");
  o.status = static_cast<Status>(status);
  o.reason = r.str();
  const uint8_t parts = r.u8();
  o.has_same_dtype = (parts & 1) != 0;
  o.has_float64 = (parts & 2) != 0;
  o.has_reduced = (parts & 4) != 0;
  if (o.has_same_dtype) o.same_dtype = getRecord(r);
  if (o.has_float64) o.float64 = getRecord(r);
  if (o.has_reduced) o.reduced = getRecord(r);
  o.float64_error = r.str();
  return o;
}

namespace {

// False at end of input before any byte; throws when it ends midway.
bool readFully(int fd, char* p, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t k = ::read(fd, p + done, n - done);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) throw std::runtime_error(std::string("replay pipe: ") + std::strerror(errno));
    if (k == 0) {
      if (done == 0) return false;
      throw std::runtime_error("replay pipe: message ends early");
    }
    done += static_cast<size_t>(k);
  }
  return true;
}

}  // namespace

bool readMessage(int fd, std::string& out) {
  uint64_t size = 0;
  if (!readFully(fd, reinterpret_cast<char*>(&size), sizeof size)) return false;
  if (size > (uint64_t(1) << 40)) throw std::runtime_error("replay pipe: message too large");
  out.resize(size);
  if (size != 0 && !readFully(fd, out.data(), size)) throw std::runtime_error("replay pipe: message ends early");
  return true;
}

void writeMessage(int fd, std::string_view bytes) {
  const uint64_t size = bytes.size();
  std::string head(reinterpret_cast<const char*>(&size), sizeof size);
  for (std::string_view part : {std::string_view(head), bytes}) {
    size_t done = 0;
    while (done < part.size()) {
      ssize_t k = ::write(fd, part.data() + done, part.size() - done);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) throw std::runtime_error(std::string("replay pipe: ") + std::strerror(errno));
      done += static_cast<size_t>(k);
    }
  }
}

}  // namespace acc::replay
