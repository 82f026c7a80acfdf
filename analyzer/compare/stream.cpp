// One rank pair's comparison as a pipeline of threads (an aligning thread,
// a reader per side, a join table, metric workers; stream.h), about 530
// lines on purpose: the threads share one set of queues, budgets and
// counters, and their wait-and-drain logic is easier to check in one place
// than spread over files.
#include "analyzer/compare/stream.h"

#include <cstdint>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "analyzer/judge/metrics.h"
#include "analyzer/compare/tensor_pairs.h"
#include "format/bytes.h"
#include "analyzer/read/recording.h"

namespace acc::analyzer {
namespace {

// Element pairs longer than this are split into chunks computed by several
// workers and merged in order (so results do not depend on scheduling).
constexpr uint64_t kChunkReals = uint64_t(1) << 20;
constexpr size_t kConvertBlock = 4096;
constexpr uint64_t kMaxHeldRecords = 1 << 12;

// What a decoded record holds in memory: its tensor bytes, and at level 1
// (no data) its metadata, which then decides how far a reader may run ahead.
uint64_t heldBytes(const format::OpRecord& r) {
  uint64_t n = sizeof(format::OpRecord) + r.name.capacity() + r.op.capacity() + r.grad_fn.capacity() +
               r.forward_name.capacity() + r.module.capacity() + r.overload.capacity() +
               r.scalars.capacity() * sizeof(format::Scalar) + r.tensors.capacity() * sizeof(format::Tensor);
  for (const format::Scalar& s : r.scalars) n += s.value.capacity();
  for (const format::Tensor& t : r.tensors) {
    n += t.device.capacity() + (t.shape.capacity() + t.strides.capacity()) * sizeof(int64_t) + t.data.capacity();
  }
  return n;
}

struct Job;

struct Task {
  Job* job = nullptr;
  int planned = -1;  // -1: every pair that is not chunked
  uint64_t first = 0, count = 0;
  size_t partial = 0;  // index into job->partials
  std::function<void()> run;  // set instead of job: decompress a data frame for a reader
};

struct Job {
  uint64_t id = 0;  // the pair's position
  format::OpRecord r0, r1;
  std::vector<PlannedPair> planned;
  std::vector<MetricAccumulator> partials;
  std::vector<std::vector<size_t>> partials_of;  // per planned pair: its partials in order
  std::vector<char> reused;  // per planned pair: metrics of an earlier pair of the same contents
  std::atomic<int> remaining{0};
  uint64_t bytes = 0;
};

// Pairs of contents whose metrics are remembered (format v4 content ids):
// past this many the memory is forgotten rather than grown with the run.
constexpr size_t kMaxKnownContents = size_t(1) << 16;

class Pipeline {
 public:
  Pipeline(const StreamJob& job, StreamCounters& counters) : job_(job), counters_(counters) {}

  void run(std::vector<std::string>& problems) {
    const bool read = !job_.file0.empty() && !job_.file1.empty();
    if (!read) reader_done_[0] = reader_done_[1] = true;
    std::vector<std::thread> workers;
    unsigned n = std::max(1u, job_.threads);
    for (unsigned i = 0; i < n; ++i) workers.emplace_back([this] { work(); });
    std::thread aligner([this] { align(); });
    std::thread r0, r1;
    if (read) {
      r0 = std::thread([&] { this->read(0, job_.file0); });
      r1 = std::thread([&] { this->read(1, job_.file1); });
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (!(aligned_ && reader_done_[0] && reader_done_[1] && tasks_.empty() && jobs_in_flight_ == 0)) {
        lock.unlock();
        if (job_.tick) job_.tick();
        lock.lock();
        done_cv_.wait_for(lock, std::chrono::milliseconds(100));
      }
      stop_ = true;
    }
    work_cv_.notify_all();
    reader_cv_.notify_all();
    align_cv_.notify_all();
    aligner.join();
    if (r0.joinable()) r0.join();
    if (r1.joinable()) r1.join();
    for (std::thread& t : workers) t.join();
    if (job_.tick) job_.tick();
    for (std::string& e : errors_) problems.push_back(std::move(e));
    if (missing_) {
      problems.push_back(dirOf(job_.file0) + " / " + dirOf(job_.file1) + ": " + std::to_string(missing_) +
                         " matched record(s) could not be read again with their data (files changed?)");
    }
  }

 private:
  static std::string dirOf(const std::string& file) { return std::filesystem::path(file).parent_path().string(); }

  // The aligning thread: publishes each window's pairs to the readers (by
  // ordinal) and how far each side is settled, then waits while more pairs
  // are in flight than allowed, unless a reader waits for the next window.
  void align() {
    for (;;) {
      std::shared_ptr<const AlignedWindow> w;
      try {
        w = job_.next_window();
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu_);
        errors_.push_back(dirOf(job_.file0) + " / " + dirOf(job_.file1) + ": " + e.what());
      }
      std::vector<uint64_t> lost;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!w) {
          aligned_ = true;
          decided_[0] = decided_[1] = UINT64_MAX;
        } else {
          for (size_t k = 0; k < w->pairs.size(); ++k) {
            const uint64_t pair = w->first_pair + k;
            const uint64_t ordinal[2] = {w->ordinal0[w->pairs[k].i0], w->ordinal1[w->pairs[k].i1]};
            for (int side = 0; side < 2; ++side) {
              if (reader_done_[side]) {
                lost.push_back(pair);
              } else {
                wanted_[side][ordinal[side]] = pair;
              }
            }
          }
          decided_[0] = w->decided[0];
          decided_[1] = w->decided[1];
          in_flight_ += w->pairs.size();
        }
      }
      reader_cv_.notify_all();
      done_cv_.notify_all();
      for (uint64_t pair : lost) lose(pair);
      if (!w) return;
      std::unique_lock<std::mutex> lock(mu_);
      align_cv_.wait(lock, [&] {
        return stop_ || in_flight_ <= job_.max_pairs_in_flight || reader_waits_[0] || reader_waits_[1];
      });
    }
  }

  void read(int side, const std::string& file) {
    try {
      readFile(side, file);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu_);
      errors_.push_back(dirOf(file) + ": " + e.what());
    }
    std::vector<uint64_t> lost;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Pairs whose record on this side was never met (the file changed).
      for (const auto& [ordinal, pair] : wanted_[side]) lost.push_back(pair);
      wanted_[side].clear();
      reader_done_[side] = true;
    }
    for (uint64_t pair : lost) lose(pair);
    reader_cv_.notify_all();
    align_cv_.notify_all();
    done_cv_.notify_all();
  }

  void readFile(int side, const std::string& file) {
    uint64_t ordinal = 0;  // counted as MetaStream counts
    // The metadata pass counted and reported damaged frames and records;
    // data frames (format v2) are first decompressed here.
    ReadDamage damage = forEachRecord(file, [&](const RawRecord& record) {
      if (record.kind != format::RecordKind::Op) return;
      const uint64_t at = ordinal++;
      uint64_t pair = 0;
      {
        std::unique_lock<std::mutex> lock(mu_);
        for (;;) {
          auto it = wanted_[side].find(at);
          if (it != wanted_[side].end()) {
            pair = it->second;
            wanted_[side].erase(it);
            break;
          }
          if (at < decided_[side] || stop_) return;  // settled, and not wanted
          reader_waits_[side] = true;
          align_cv_.notify_all();
          reader_cv_.wait(lock);
          reader_waits_[side] = false;
        }
      }
      // Whole data frames are decompressed by the workers, in parallel;
      // slices of frames shared with other records by this reader, which
      // caches the last frame it read.
      format::OpRecord r;
      try {
        r = record.decodeOp(true, [this](int fd, const auto& frames) { return inflate(fd, frames); });
      } catch (const format::FormatError&) {
        lose(pair);
        throw;  // counted as a damaged record
      }
      add(side, pair, std::move(r));
    });
    if (damage.missing_data) {
      ReadDamage data;
      data.missing_data = damage.missing_data;
      std::lock_guard<std::mutex> lock(mu_);
      errors_.push_back(data.describe(file));
    }
  }

  // A pair one of whose records cannot be read: its partner is dropped
  // (now, or when it comes) and it is delivered without tensors.
  void lose(uint64_t pair) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!lost_.insert(pair).second) return;
      for (auto& slots : slots_) {
        auto it = slots.find(pair);
        if (it == slots.end()) continue;
        held_ -= heldBytes(*it->second);
        --held_records_;
        slots.erase(it);
        lost_.erase(pair);  // its partner has come: nothing more to drop
      }
      ++missing_;
      --in_flight_;
    }
    job_.deliver(pair, {});
    reader_cv_.notify_all();
    align_cv_.notify_all();
    done_cv_.notify_all();
  }

  // Decompresses `frames` on the workers and this reader (ahead of queued
  // metric work, so readers keep going); true for each one that failed.
  std::vector<char> inflate(int fd, const std::vector<format::DeferredFrame>& frames) {
    if (frames.size() < 2) return inflateOnThisThread(fd, frames);
    std::vector<char> failed(frames.size(), 0);
    std::mutex batch_mu;
    std::condition_variable batch_cv;
    size_t pending = frames.size();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = frames.size(); i-- > 0;) {
        Task task;
        task.run = [&, i] {
          thread_local format::DataFrameInflater inflater;
          failed[i] = !inflater.inflate(fd, frames[i].frame, frames[i].out);
          std::lock_guard<std::mutex> done(batch_mu);
          if (--pending == 0) batch_cv.notify_all();
        };
        tasks_.push_front(std::move(task));
      }
    }
    work_cv_.notify_all();
    // The reader decompresses too instead of idling: decompression tasks are
    // at the front of the queue, its own among them.
    for (;;) {
      std::function<void()> run;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!tasks_.empty() && tasks_.front().run) {
          run = std::move(tasks_.front().run);
          tasks_.pop_front();
        }
      }
      if (!run) break;
      run();
    }
    std::unique_lock<std::mutex> lock(batch_mu);
    batch_cv.wait(lock, [&] { return pending == 0; });
    return failed;
  }

  // A reader hands over one record; it waits while the budget is exceeded
  // and something else can free memory: a record that completes a pair waits
  // for the jobs in flight (else a reader far ahead of the other would have
  // its partners admitted without limit), any other one for a pair or a job.
  void add(int side, uint64_t id, format::OpRecord&& r) {
    const uint64_t bytes = heldBytes(r);
    std::unique_lock<std::mutex> lock(mu_);
    if (lost_.erase(id)) return;  // its partner could not be read
    // The other reader may deliver the partner while this one waits.
    auto completes = [&] { return slots_[1 - side].count(id) != 0; };
    auto proceed = [&] { return completes() ? jobs_in_flight_ == 0 : mustProceed(side); };
    // Records without data (level 1) weigh little each, but a reader far
    // ahead of the other would hold millions: their number is bounded too.
    while (held_ > 0 && (held_ + bytes > job_.memory_budget || held_records_ >= kMaxHeldRecords) && !proceed()) {
      waiting_[side] = true;
      waiting_completes_[side] = completes();
      reader_cv_.notify_all();
      reader_cv_.wait(lock);
      waiting_[side] = false;
    }
    held_ += bytes;
    ++held_records_;
    counters_.peak_held_bytes = std::max(counters_.peak_held_bytes, held_);
    if (!completes()) {
      slots_[side][id] = std::make_unique<format::OpRecord>(std::move(r));
      lock.unlock();
      reader_cv_.notify_all();  // the other reader may hold its partner
      return;
    }
    auto slot = slots_[1 - side].find(id);
    std::unique_ptr<format::OpRecord> other = std::move(slot->second);
    slots_[1 - side].erase(slot);
    auto job = std::make_unique<Job>();
    job->id = id;
    job->bytes = bytes + heldBytes(*other);  // as counted when each was added
    job->r0 = side == 0 ? std::move(r) : std::move(*other);
    job->r1 = side == 0 ? std::move(*other) : std::move(r);
    ++jobs_in_flight_;
    lock.unlock();
    other.reset();
    std::vector<Task> tasks = plan(job.get());
    if (tasks.size() == 1 && light(*job)) {
      // Statistics only (level 1) or metrics known already: handing it to a
      // worker would cost more than computing it here.
      runWhole(job.release());
      return;
    }
    lock.lock();
    for (Task& t : tasks) tasks_.push_back(t);
    job.release();  // owned by its tasks; the last one deletes it
    lock.unlock();
    work_cv_.notify_all();
  }

  // A reader whose record completes no pair proceeds only when nothing else
  // can free memory: the other reader is done, or waits with a record that
  // completes no pair either (else both would wait forever). When the other
  // waits with a partner it goes first: letting this one through too would
  // grow the unpaired records by one each time.
  bool mustProceed(int side) const {
    const int other = 1 - side;
    return jobs_in_flight_ == 0 && tasks_.empty() &&
           ((waiting_[other] && !waiting_completes_[other]) || reader_done_[0] || reader_done_[1]);
  }

  std::vector<Task> plan(Job* job) {
    job->planned = planPairs(job->r0, job->r1, *job_.thresholds);
    job->partials_of.resize(job->planned.size());
    job->reused.assign(job->planned.size(), 0);
    std::vector<Task> tasks;
    tasks.push_back(Task{job, -1, 0, 0, 0, {}});
    for (size_t i = 0; i < job->planned.size(); ++i) {
      PlannedPair& p = job->planned[i];
      if (p.kind == PairKind::Elements && reuse(p)) {
        job->reused[i] = 1;
        continue;
      }
      if (p.kind != PairKind::Elements || p.reals <= kChunkReals) continue;
      for (uint64_t first = 0; first < p.reals; first += kChunkReals) {
        size_t partial = job->partials.size();
        job->partials.emplace_back();
        job->partials_of[i].push_back(partial);
        tasks.push_back(Task{job, static_cast<int>(i), first, std::min(kChunkReals, p.reals - first), partial, {}});
      }
    }
    job->remaining = static_cast<int>(tasks.size());
    return tasks;
  }

  void work() {
    std::vector<double> b(kConvertBlock), t(kConvertBlock);
    for (;;) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      if (task.run) {
        task.run();
        continue;
      }
      Job* job = task.job;
      if (task.planned < 0) {
        runWhole(job, &b, &t);
        continue;
      }
      accumulate(job->planned[task.planned], task.first, task.count, job->partials[task.partial], b, t);
      if (--job->remaining == 0) finish(job);
    }
  }

  // Whether a job computes no element-wise metrics.
  static bool light(const Job& job) {
    for (size_t i = 0; i < job.planned.size(); ++i) {
      if (job.planned[i].kind == PairKind::Elements && !job.reused[i]) return false;
    }
    return true;
  }

  // A job's task over every pair that is not chunked; `b` and `t` are
  // conversion buffers (only element-wise pairs need them).
  void runWhole(Job* job, std::vector<double>* b = nullptr, std::vector<double>* t = nullptr) {
    for (size_t i = 0; i < job->planned.size(); ++i) {
      PlannedPair& p = job->planned[i];
      if (p.kind == PairKind::Stats) {
        compareStats(p, *job_.thresholds);
      } else if (p.kind == PairKind::Elements && job->partials_of[i].empty() && !job->reused[i]) {
        MetricAccumulator acc;
        accumulate(p, 0, p.reals, acc, *b, *t);
        finishElements(p, acc);
      }
    }
    if (--job->remaining == 0) finish(job);
  }

  static void accumulate(const PlannedPair& p, uint64_t first, uint64_t count, MetricAccumulator& acc,
                         std::vector<double>& b, std::vector<double>& t) {
    for (uint64_t at = first; at < first + count; at += kConvertBlock) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(kConvertBlock, first + count - at));
      toDouble(p.t0->data.data(), p.t0->dtype, at, n, b.data());
      toDouble(p.t1->data.data(), p.t1->dtype, at, n, t.data());
      acc.add(b.data(), t.data(), n, p.params);
    }
  }

  void finishElements(PlannedPair& p, const MetricAccumulator& acc) {
    std::string note = p.pair.metrics.mismatch;
    p.pair.metrics = acc.finish(p.params);
    p.pair.metrics.mismatch = note;
    judge(p.pair, *job_.thresholds);
    if (p.t0->content != 0 && p.t1->content != 0) {
      std::lock_guard<std::mutex> lock(known_mu_);
      if (known_.size() >= kMaxKnownContents) known_.clear();
      known_.emplace(std::make_pair(p.t0->content, p.t1->content), p.pair.metrics);
    }
  }

  // Fills `p` from an earlier pair of the same two contents (same values,
  // dtypes and shapes, so the same metrics); false when there is none yet.
  bool reuse(PlannedPair& p) {
    if (p.t0->content == 0 || p.t1->content == 0) return false;
    {
      std::lock_guard<std::mutex> lock(known_mu_);
      auto it = known_.find(std::make_pair(p.t0->content, p.t1->content));
      if (it == known_.end()) return false;
      std::string note = p.pair.metrics.mismatch;
      p.pair.metrics = it->second;
      p.pair.metrics.mismatch = note;
    }
    judge(p.pair, *job_.thresholds);
    counters_.pairs_reused += 1;
    return true;
  }

  void finish(Job* job) {
    for (size_t i = 0; i < job->planned.size(); ++i) {
      if (job->partials_of[i].empty()) continue;
      MetricAccumulator acc;
      for (size_t k : job->partials_of[i]) acc.merge(job->partials[k]);
      finishElements(job->planned[i], acc);
    }
    uint64_t data = 0;
    std::vector<TensorPair> tensors;
    tensors.reserve(job->planned.size());
    for (PlannedPair& p : job->planned) {
      if (p.kind == PairKind::Elements) data += p.t0->data.size() + p.t1->data.size();
      tensors.push_back(std::move(p.pair));
    }
    const uint64_t bytes = job->bytes;
    const uint64_t id = job->id;
    delete job;
    job_.deliver(id, std::move(tensors));
    counters_.pairs_done += 1;
    counters_.bytes_done += data;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_ -= bytes;
      held_records_ -= 2;
      --jobs_in_flight_;
      --in_flight_;
    }
    reader_cv_.notify_all();
    align_cv_.notify_all();
    done_cv_.notify_all();
  }

  const StreamJob& job_;
  StreamCounters& counters_;
  std::mutex mu_;
  std::condition_variable reader_cv_, work_cv_, done_cv_, align_cv_;
  // Records waiting for their partner, by pair (a few thousand at most).
  std::unordered_map<uint64_t, std::unique_ptr<format::OpRecord>> slots_[2];
  // Published pairs not yet read, by the ordinal of each side's record.
  std::unordered_map<uint64_t, uint64_t> wanted_[2];
  uint64_t decided_[2] = {0, 0};  // AlignedWindow::decided of the last window
  bool reader_waits_[2] = {false, false};  // for the next window
  bool reader_done_[2] = {false, false};
  bool aligned_ = false;  // the last window is published
  uint64_t in_flight_ = 0;  // pairs published and not yet delivered
  std::unordered_set<uint64_t> lost_;  // pairs lost whose partner may still come
  uint64_t missing_ = 0;
  std::deque<Task> tasks_;
  uint64_t held_ = 0;
  uint64_t held_records_ = 0;  // decoded records held, paired or waiting for their partner
  int jobs_in_flight_ = 0;
  bool waiting_[2] = {false, false};
  bool waiting_completes_[2] = {false, false};  // whether the waiting record completes a pair
  bool stop_ = false;
  // Metrics by (DIR0 content, DIR1 content) of the pairs compared element-wise.
  std::mutex known_mu_;
  std::map<std::pair<uint64_t, uint64_t>, TensorMetrics> known_;
  std::vector<std::string> errors_;
};

}  // namespace

void streamCompare(const StreamJob& job, StreamCounters& counters, std::vector<std::string>& problems) {
  Pipeline pipeline(job, counters);
  pipeline.run(problems);
}

}  // namespace acc::analyzer
