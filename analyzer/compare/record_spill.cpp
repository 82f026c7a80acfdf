#include "analyzer/compare/record_spill.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "format/bytes.h"
#include "format/frame.h"
#include "format/record_sink.h"

namespace acc::analyzer {
namespace {

constexpr size_t kFrameBytes = 1 << 20;

void putShape(format::ByteWriter& w, const std::vector<int64_t>& shape) {
  w.varint(shape.size());
  for (int64_t d : shape) w.zigzag(d);
}

std::vector<int64_t> getShape(format::ByteReader& r) {
  std::vector<int64_t> shape(r.varint());
  for (int64_t& d : shape) d = r.zigzag();
  return shape;
}

// The doubles of TensorMetrics and ReplayCheck, in a fixed order.
constexpr double TensorMetrics::*kMetricDoubles[] = {
    &TensorMetrics::cosine,     &TensorMetrics::max_abs,    &TensorMetrics::max_rel, &TensorMetrics::mean_abs,
    &TensorMetrics::rmse,       &TensorMetrics::rel_l2,     &TensorMetrics::within_1e3, &TensorMetrics::within_5e3,
    &TensorMetrics::max_ulp,    &TensorMetrics::sign_agree, &TensorMetrics::stat_error};
constexpr double ReplayCheck::*kReplayDoubles[] = {&ReplayCheck::error1, &ReplayCheck::error1_dtype,
                                                   &ReplayCheck::cpu_error, &ReplayCheck::error0,
                                                   &ReplayCheck::tolerance, &ReplayCheck::precision_error};

void putPair(format::ByteWriter& w, const TensorPair& p) {
  w.u8(static_cast<uint8_t>(p.role));
  w.varint(p.position);
  w.varint(p.item);
  w.u8(static_cast<uint8_t>(p.dtype0));
  w.u8(static_cast<uint8_t>(p.dtype1));
  putShape(w, p.shape0);
  putShape(w, p.shape1);
  const TensorMetrics& m = p.metrics;
  w.u8(static_cast<uint8_t>(p.has_stats0 | p.has_stats1 << 1 | m.compared << 2 | m.from_stats << 3 |
                            m.checksum_equal << 4 | p.uninitialized << 5));
  if (p.has_stats0) format::encodeStats(p.stats0, w);
  if (p.has_stats1) format::encodeStats(p.stats1, w);
  w.str(m.mismatch);
  for (double TensorMetrics::*f : kMetricDoubles) w.f64(m.*f);
  w.varint(m.nan_mismatch);
  w.varint(m.inf_mismatch);
  w.u8(static_cast<uint8_t>(p.verdict));
  w.str(p.reason);
}

TensorPair getPair(format::ByteReader& r) {
  TensorPair p;
  p.role = static_cast<format::Role>(r.u8());
  p.position = static_cast<uint32_t>(r.varint());
  p.item = static_cast<uint32_t>(r.varint());
  p.dtype0 = static_cast<format::Dtype>(r.u8());
  p.dtype1 = static_cast<format::Dtype>(r.u8());
  p.shape0 = getShape(r);
  p.shape1 = getShape(r);
  TensorMetrics& m = p.metrics;
  const uint8_t flags = r.u8();
  p.has_stats0 = flags & 1;
  p.has_stats1 = flags & 2;
  m.compared = flags & 4;
  m.from_stats = flags & 8;
  m.checksum_equal = flags & 16;
  p.uninitialized = flags & 32;
  if (p.has_stats0) p.stats0 = format::decodeStats(r);
  if (p.has_stats1) p.stats1 = format::decodeStats(r);
  m.mismatch = r.str();
  for (double TensorMetrics::*f : kMetricDoubles) m.*f = r.f64();
  m.nan_mismatch = r.varint();
  m.inf_mismatch = r.varint();
  p.verdict = static_cast<Verdict>(r.u8());
  p.reason = r.str();
  return p;
}

}  // namespace

void encodeRecord(const RecordComparison& r, std::string& out) {
  format::ByteWriter w(out);
  for (const std::string* s : {&r.name, &r.name1, &r.op, &r.grad_fn, &r.module, &r.location, &r.rerecord}) w.str(*s);
  w.u8(static_cast<uint8_t>(r.has_module | r.aligned_by_sequence << 1 | r.origin << 2 | r.inherits_recorded << 3 |
                            r.from_other_ranks << 4 | r.screened << 5));
  w.u8(static_cast<uint8_t>(r.pass));
  w.zigzag(r.step);
  w.zigzag(r.rank);
  w.varint(r.index0);
  w.varint(r.index1);
  w.varint(r.stack0.size());
  for (const std::string& f : r.stack0) w.str(f);
  w.varint(r.tensors.size());
  for (const TensorPair& p : r.tensors) putPair(w, p);
  w.u8(static_cast<uint8_t>(r.verdict));
  w.f64(r.input_error);
  w.f64(r.output_error);
  w.u8(static_cast<uint8_t>(r.replay.state));
  w.str(r.replay.reason);
  w.str(r.replay.precision);
  w.str(r.replay.precision_setting);
  for (double ReplayCheck::*f : kReplayDoubles) w.f64(r.replay.*f);
  w.finish();
}

RecordComparison decodeRecord(std::string_view bytes) {
  format::ByteReader in(bytes);
  RecordComparison r;
  for (std::string* s : {&r.name, &r.name1, &r.op, &r.grad_fn, &r.module, &r.location, &r.rerecord}) *s = in.str();
  const uint8_t flags = in.u8();
  r.has_module = flags & 1;
  r.aligned_by_sequence = flags & 2;
  r.origin = flags & 4;
  r.inherits_recorded = flags & 8;
  r.from_other_ranks = flags & 16;
  r.screened = flags & 32;
  r.pass = static_cast<format::Pass>(in.u8());
  r.step = in.zigzag();
  r.rank = in.zigzag();
  r.index0 = in.varint();
  r.index1 = in.varint();
  r.stack0.resize(in.varint());
  for (std::string& f : r.stack0) f = in.str();
  r.tensors.resize(in.varint());
  for (TensorPair& p : r.tensors) p = getPair(in);
  r.verdict = static_cast<Verdict>(in.u8());
  r.input_error = in.f64();
  r.output_error = in.f64();
  r.replay.state = static_cast<ReplayState>(in.u8());
  r.replay.reason = in.str();
  r.replay.precision = in.str();
  r.replay.precision_setting = in.str();
  for (double ReplayCheck::*f : kReplayDoubles) r.replay.*f = in.f64();
  return r;
}

RecordSpill::Part::Part(std::string path, uint64_t count, uint64_t bytes)
    : path_(std::move(path)), keep_(true), count_(count), bytes_(bytes) {}

RecordSpill::Part::Part(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) throw std::runtime_error(path_ + ": cannot create (compare spills its rows there): " + std::strerror(errno));
  const std::string header = format::fileHeader();
  format::writeAll(fd_, header.data(), header.size());
}

void RecordSpill::Part::append(const RecordComparison& r) {
  thread_local std::string one;
  one.clear();
  encodeRecord(r, one);
  format::ByteWriter w(payload_);
  w.varint(one.size());
  w.raw(one.data(), one.size());
  w.finish();
  ++count_;
  if (payload_.size() >= kFrameBytes) flush();
}

void RecordSpill::Part::flush() {
  if (payload_.empty()) return;
  thread_local format::FrameEncoder encoder(1);
  encoder.encode(payload_, frame_);
  if (int err = format::writeAll(fd_, frame_.data(), frame_.size())) {
    throw std::runtime_error(path_ + ": " + std::strerror(err) + " (compare spills its rows there: free some disk)");
  }
  bytes_ += frame_.size();
  payload_.clear();
}

void RecordSpill::Part::close() {
  flush();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

RecordSpill::RecordSpill(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    dir_ = tmp && *tmp ? tmp : "/tmp";
  }
}

RecordSpill::~RecordSpill() {
  for (const auto& p : parts_) {
    if (p->fd_ >= 0) ::close(p->fd_);
    if (!p->keep_) ::unlink(p->path_.c_str());
  }
}

RecordSpill::Part& RecordSpill::addPart() {
  std::string path = dir_ + "/acc-compare-rows-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) throw std::runtime_error(dir_ + ": cannot create a file for compare's rows: " + std::strerror(errno));
  ::close(fd);
  parts_.push_back(std::unique_ptr<Part>(new Part(path)));
  return *parts_.back();
}

RecordSpill::Part& RecordSpill::addFile(const std::string& path) {
  parts_.push_back(std::unique_ptr<Part>(new Part(path)));
  parts_.back()->keep_ = true;
  return *parts_.back();
}

void RecordSpill::adopt(const std::string& path, uint64_t count, uint64_t bytes) {
  auto part = std::unique_ptr<Part>(new Part(path, count, bytes));
  parts_.push_back(std::move(part));
}

std::vector<RecordSpill::PartFile> RecordSpill::files() const {
  std::vector<PartFile> out;
  for (const auto& p : parts_) out.push_back({p->path_, p->count_, p->bytes_});
  return out;
}

uint64_t RecordSpill::size() const {
  uint64_t n = 0;
  for (const auto& p : parts_) n += p->count_;
  return n;
}

uint64_t RecordSpill::bytes() const {
  uint64_t n = 0;
  for (const auto& p : parts_) n += p->bytes_;
  return n;
}

void RecordSpill::forEach(const std::function<void(RecordComparison&)>& f) const {
  std::string payload;
  for (const auto& part : parts_) {
    format::FrameReader reader(part->path_);
    uint64_t read = 0;
    while (reader.next(payload)) {
      format::ByteReader in(payload);
      while (!in.done()) {
        RecordComparison r = decodeRecord(in.view(in.varint()));
        ++read;
        f(r);
      }
    }
    if (read != part->count_) throw std::runtime_error(part->path_ + ": compare's spilled rows cannot be read back");
  }
}

}  // namespace acc::analyzer
