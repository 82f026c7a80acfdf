#include "analyzer/compare/meta_stream.h"

#include <algorithm>

#include "format/bytes.h"

namespace acc::analyzer {
namespace {

// Records are handed over in batches (one lock per batch), and the reader
// stays at most this many batches ahead: a few thousand records.
constexpr size_t kMetaBatch = 512;
constexpr size_t kBatchesAhead = 8;

// A records file that cannot be read at all.
std::string notCompared(const RankRecording& rank, const char* why) {
  return std::string(why) + " (rank " + std::to_string(rank.rank) + " not compared)";
}

}  // namespace

void StackTable::add(format::StackRecord&& stack) {
  std::vector<std::string> frames;
  frames.reserve(stack.frames.size());
  for (format::StackFrame& f : stack.frames) frames.push_back(std::move(f.text));
  std::lock_guard<std::mutex> lock(mutex_);
  frames_[stack.id] = std::move(frames);
}

std::vector<std::string> StackTable::frames(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = frames_.find(id);
  return it == frames_.end() ? std::vector<std::string>() : it->second;
}

MetaStream::MetaStream(const RankRecording& rank) {
  const std::string file = recordsFile(rank);
  try {
    format::FrameReader probe(file);  // a clear error now rather than on the thread
  } catch (const format::FormatError& e) {
    readable_ = false;
    done_ = true;
    problem_ = notCompared(rank, e.what());
    return;
  }
  thread_ = std::thread([this, rank, file] { readAll(rank, file); });
}

MetaStream::~MetaStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MetaStream::readAll(const RankRecording& rank, const std::string& file) {
  std::string problem;
  std::vector<MetaItem> batch;
  batch.reserve(kMetaBatch);
  uint64_t ordinal = 0;
  try {
    ReadDamage damage = forEachRecord(file, [&](const RawRecord& record) {
      if (record.kind == format::RecordKind::Stack) {
        stacks_.add(format::decodeStack(record.body));
        return;
      }
      if (record.kind != format::RecordKind::Op) return;
      MetaItem item;
      item.ordinal = ordinal++;  // before decoding: a damaged record keeps its place
      item.meta = recordMeta(record.decodeOp(false));
      batch.push_back(std::move(item));
      records_.fetch_add(1, std::memory_order_relaxed);
      if (batch.size() == kMetaBatch) handOver(batch);
    });
    if (damage.any()) problem = damage.describe(file);
  } catch (const Stopped&) {
  } catch (const InputError& e) {
    problem = notCompared(rank, e.what());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!batch.empty()) batches_.push_back(std::move(batch));
  problem_ = problem;
  done_ = true;
  cv_.notify_all();
}

void MetaStream::handOver(std::vector<MetaItem>& batch) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return stop_ || batches_.size() < kBatchesAhead; });
  if (stop_) throw Stopped{};
  batches_.push_back(std::move(batch));
  lock.unlock();
  cv_.notify_all();
  batch = std::vector<MetaItem>();
  batch.reserve(kMetaBatch);
}

bool MetaStream::next(MetaItem& out) {
  if (taken_ == current_.size()) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return done_ || !batches_.empty(); });
    if (batches_.empty()) return false;
    current_ = std::move(batches_.front());
    batches_.erase(batches_.begin());
    taken_ = 0;
    lock.unlock();
    cv_.notify_all();
  }
  out = std::move(current_[taken_++]);
  return true;
}

std::string MetaStream::problem() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return problem_;
}

}  // namespace acc::analyzer
