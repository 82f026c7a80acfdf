#include "analyzer/read/content_table.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <limits>
#include <string>

namespace acc::analyzer {
namespace {

constexpr size_t kContentBatch = 512;  // contents written at once (about 40 KB)

// A file that disappears with the process: created and unlinked at once,
// in $TMPDIR (else /tmp). -1 when it cannot be made.
int anonymousFile() {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/acc-contents-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd >= 0) ::unlink(path.c_str());
  return fd;
}

}  // namespace

ContentTable::~ContentTable() {
  if (fd_ >= 0) ::close(fd_);
}

uint64_t ContentTable::resolve(format::OpRecord& r) {
  uint64_t unknown = 0;
  for (format::Tensor& t : r.tensors) {
    if (t.content == 0) continue;
    if (!t.content_ref) {
      Content c;
      c.id = t.content;
      c.has_stats = t.has_stats;
      c.stats = t.stats;
      c.has_data = t.has_data;
      c.data_in_stream = t.data_in_stream;
      c.data_offset = t.data_offset;
      c.data_size = t.has_data ? t.data_size : 0;
      c.delta_base = t.has_data ? t.delta_base : 0;
      c.dtype = t.dtype;
      c.delta_map = c.delta_base != 0 ? t.delta_map : format::DeltaMap::None;
      c.delta_scalar = t.delta_scalar;
      define(c);
      continue;
    }
    t.content_ref = false;
    Content c;
    if (!find(t.content, c)) {
      ++unknown;
      t.has_stats = false;
      t.has_data = false;
      t.data_in_stream = false;
      continue;
    }
    t.has_stats = t.has_stats && c.has_stats;
    if (t.has_stats) t.stats = c.stats;
    t.has_data = t.has_data && c.has_data;
    t.data_in_stream = t.has_data && c.data_in_stream;
    t.data_offset = t.has_data ? c.data_offset : 0;
    t.data_size = t.has_data ? c.data_size : 0;
    t.delta_base = t.has_data ? c.delta_base : 0;
    t.delta_map = t.delta_base != 0 ? c.delta_map : format::DeltaMap::None;
    t.delta_scalar = c.delta_scalar;
  }
  return unknown;
}

bool ContentTable::dataPlace(uint64_t id, DataPlace& out) {
  Content c;
  if (!find(id, c) || !c.has_data || !c.data_in_stream) return false;
  out = {c.data_offset, c.data_size, c.delta_base, c.dtype, c.delta_map, c.delta_scalar};
  return true;
}

void ContentTable::define(const Content& c) {
  if (!recent_) {
    // calloc: pages untouched until used, so a short file costs little.
    recent_.reset(static_cast<Content*>(std::calloc(kRecent, sizeof(Content))));
    if (!recent_) {
      overflow_[c.id] = c;
      return;
    }
  }
  Content& slot = recent_[c.id % kRecent];
  if (slot.id != 0 && slot.id != c.id) spill(slot);
  slot = c;
}

bool ContentTable::find(uint64_t id, Content& out) {
  if (recent_ && recent_[id % kRecent].id == id) {
    out = recent_[id % kRecent];
    return true;
  }
  if (!batch_.empty() && id >= batch_.front().id && id - batch_.front().id < batch_.size()) {
    out = batch_[id - batch_.front().id];
    return true;
  }
  if (auto it = overflow_.find(id); it != overflow_.end()) {
    out = it->second;
    return true;
  }
  if (fd_ < 0 || id >= written_end_) return false;
  Content c;
  const ssize_t n = ::pread(fd_, &c, sizeof c, static_cast<off_t>(id * sizeof(Content)));
  if (n != static_cast<ssize_t>(sizeof c) || c.id != id) return false;  // never written: a hole of zeros
  out = c;
  return true;
}

// Older contents leave memory in about id order: consecutive ones are
// written together at their ids' offsets (a sparse file).
void ContentTable::spill(const Content& c) {
  ++spilled_;
  if (!no_file_ && !batch_.empty() && c.id == batch_.front().id + batch_.size() && batch_.size() < kContentBatch) {
    batch_.push_back(c);
    return;
  }
  flush();
  if (no_file_ || c.id > std::numeric_limits<uint64_t>::max() / sizeof(Content) / 2) {
    overflow_[c.id] = c;  // no file, or an id no file offset can hold
    return;
  }
  batch_.push_back(c);
}

void ContentTable::flush() {
  if (batch_.empty()) return;
  if (fd_ < 0 && !no_file_) {
    fd_ = anonymousFile();
    no_file_ = fd_ < 0;
  }
  const uint64_t first = batch_.front().id;
  const size_t bytes = batch_.size() * sizeof(Content);
  const bool written = !no_file_ && ::pwrite(fd_, batch_.data(), bytes, static_cast<off_t>(first * sizeof(Content))) ==
                                        static_cast<ssize_t>(bytes);
  if (written) {
    written_end_ = std::max<uint64_t>(written_end_, first + batch_.size());
  } else {
    // A full disk never loses a content: memory holds it instead.
    for (const Content& c : batch_) overflow_[c.id] = c;
  }
  batch_.clear();
}

}  // namespace acc::analyzer
