#include "recorder/reference/reference.h"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>
#include <utility>

#include <ATen/EmptyTensor.h>
#include <c10/util/SmallVector.h>

#include "analyzer/compare/tensor_pairs.h"
#include "env/config.h"
#include "recorder/capture/device/device_capture.h"
#include "recorder/capture/tensor_capture.h"
#include "recorder/observe/emit_record.h"
#include "recorder/session/session.h"
#include "recorder/write/record_pool.h"

namespace acc::recorder {
namespace {

using format::Role;

// How long a record waits for its device statistics' batch before the
// reference starts it (a batch otherwise runs at the step's end or when full).
constexpr auto kNudgeAfter = std::chrono::milliseconds(200);

// ACC_REFERENCE_THRESHOLDS: compare's threshold options, "--flag value" or
// "--flag=value", separated by spaces. An error message, empty on success.
std::string applyThresholds(analyzer::Thresholds& t, const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  for (size_t i = 0; i < words.size(); ++i) {
    std::string flag = words[i], value;
    const size_t eq = flag.find('=');
    if (eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (i + 1 < words.size()) {
      value = words[++i];
    } else {
      return flag + " needs a value";
    }
    const std::string err = analyzer::applyThresholdFlag(t, flag, value);
    if (!err.empty()) return err;
  }
  return "";
}

// A copy of a record but for its tensors' bytes, which the judge does not
// read (they are moved aside while the record is copied).
format::OpRecord withoutBytes(CapturedOp& op) {
  std::vector<std::string> bytes(op.tensors.size());
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i].swap(op.tensors[i].data);
  format::OpRecord copy = op;
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i].swap(op.tensors[i].data);
  for (format::Tensor& t : copy.tensors) t.has_data = false;
  return copy;
}

// mu_'s holders keep it for a fraction of a microsecond: a thread that
// finds it taken tries again for about as long before it sleeps in the
// kernel, which costs tens of microseconds to come back from.
void lockSpinning(std::mutex& mu) {
  for (int i = 0; i < 256; ++i) {
    if (mu.try_lock()) return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  mu.lock();
}

// A copy of what an in-place op is about to overwrite. A dense CPU tensor
// is copied without an op: clone() through the dispatcher cost about as
// much as the rest of ACC_REFERENCE's work on an optimizer's op.
at::Tensor copyOf(const at::Tensor& t) {
  if (t.device().is_cpu() && t.layout() == at::kStrided && t.is_contiguous() && !t.is_conj() && !t.is_neg()) {
    at::Tensor copy = at::detail::empty_cpu(t.sizes(), t.scalar_type());
    if (t.nbytes() > 0) std::memcpy(copy.data_ptr(), t.data_ptr(), t.nbytes());
    return copy;
  }
  return t.clone();
}

std::string shortNumber(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

}  // namespace

std::unique_ptr<Reference> Reference::open(const env::Config& config, int64_t rank, Session& session,
                                           StatsBatch& batch, std::string& error) {
  analyzer::Thresholds thresholds = analyzer::defaultThresholds();
  if (!config.reference_thresholds.empty()) {
    const std::string err = applyThresholds(thresholds, config.reference_thresholds);
    if (!err.empty()) {
      error = "ACC_REFERENCE_THRESHOLDS=\"" + config.reference_thresholds + "\": " + err +
              "; allowed: compare's threshold options (acc-analyzer compare --help), e.g. --fail-rel-l2 bf16=0.02";
      return nullptr;
    }
  }
  const std::string file = env::rankFile(config.reference, rank, env::kRecordsFile);
  if (file.empty()) {
    error = "ACC_REFERENCE=\"" + config.reference + "\" has no records of rank " + std::to_string(rank) +
            "; allowed: a recording of the same program with the same ranks";
    return nullptr;
  }
  try {
    return std::make_unique<Reference>(config, session, batch, std::make_unique<ReferenceReader>(file), thresholds,
                                       file);
  } catch (const std::exception& e) {
    error = "ACC_REFERENCE=\"" + config.reference + "\": " + e.what();
    return nullptr;
  }
}

Reference::Reference(const env::Config& config, Session& session, StatsBatch& batch,
                     std::unique_ptr<ReferenceReader> reader, const analyzer::Thresholds& thresholds, std::string file)
    : session_(session),
      held_bytes_bound_(static_cast<size_t>(config.buffer_mb) << 20),
      context_(config.reference_context),
      max_finds_(config.reference_max),
      level_(config.level),
      batch_(batch),
      thresholds_(thresholds),
      file_(std::move(file)),
      holding_(config.level < 2),
      reader_(std::move(reader)),
      origin_judge_(thresholds),
      thread_([this] { run(); }) {}

Reference::~Reference() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Reference::noteOverwrittenInputs(CapturedOp& r) {
  if (!holds()) return;
  LazyCaptureGuard guard;
  try {
    forEachOverwrittenInput(r, [&](size_t i) {
      TensorHold& h = *r.hold;
      const at::Tensor& t = h.tensors[i];
      // A copy of what the op overwrites, for its level-2 record should it
      // be a find; on a device it is queued like any kernel, never waited
      // for. Tensors larger than an eighth of ACC_BUFFER_MB go uncopied.
      if (!readable(t) || t.nbytes() > held_bytes_bound_ / 8) return;
      guard.need();
      h.overwritten.push_back(i);
      h.before.push_back(copyOf(t));
    });
  } catch (...) {
    if (r.hold) {
      TensorHold& h = *r.hold;
      h.before.resize(std::min(h.before.size(), h.overwritten.size()));
      h.overwritten.resize(h.before.size());
    }
  }
}

void Reference::finish(Session& s, std::unique_ptr<CapturedOp> record) {
  Entry e;
  e.op = std::move(record);
  e.since = std::chrono::steady_clock::now();
  // Its contents are referable at once, as they are when a record goes
  // straight to the writer: records are written in the order they finish,
  // so its definitions still come first in the file (a find's level-2
  // record keeps them), and later records refer to them instead of
  // summarising the same tensors again.
  if (ContentStore* contents = s.contents()) contents->publish(e.op->contents);
  // What takes time is done apart from mu_, so that the judge rarely finds
  // it taken: an op thread that waited for mu_ slept in the kernel, 1.5 ms
  // a step on the LM.
  if (e.op->hold) {
    try {
      if (e.op->pass == format::Pass::Forward) {
        e.published = publishForward(*e.op);
      } else {
        e.forward = forwardInputs(*e.op);
      }
    } catch (...) {
      s.counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
    }
    e.held_bytes = heldBytes(e);
  }
  c10::SmallVector<std::unique_ptr<TensorHold>, 4> dead;  // let go after mu_
  {
    lockSpinning(mu_);
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    // A few judged records' tensors per op, oldest first, as the program
    // would have let them go: a judged batch's all at once left the
    // allocator hundreds of chunks to sort on the next allocation.
    for (size_t n = dead_.size() > kDeadBacklog ? dead_.size() - kDeadBacklog + kDeadPerOp : kDeadPerOp;
         n > 0 && !dead_.empty(); --n) {
      dead.push_back(std::move(dead_.front()));
      dead_.pop_front();
    }
    if (e.op->hold) {
      // A CPU program waits for the judge rather than let its records go
      // unheld; a device's records never wait (their statistics would), nor
      // a CPU record behind one whose device values are on their way.
      const auto room = [&] {
        return held_ops_ < kHeldOps || stop_ || unjudged_ == 0 || front_waits_ || !onHost(*e.op);
      };
      if (!room()) {
        work_.notify_one();
        ++waiting_for_room_;
        room_.wait(lock, room);
        --waiting_for_room_;
      }
      if (std::unique_ptr<TensorHold> gone = hold(e)) dead.push_back(std::move(gone));
    }
    // The judge looks every kPoll and is not woken: a wake-up is a futex
    // call, which cost an op thread tens of microseconds in a VM.
    ++unjudged_;
    pending_.push_back(std::move(e));
  }
  for (std::unique_ptr<TensorHold>& h : dead) TensorHold::recycle(std::move(h));
}

size_t Reference::heldBytes(const Entry& e) {
  const TensorHold& h = *e.op->hold;
  size_t bytes = 0;
  for (const at::Tensor& t : h.tensors) {
    if (t.defined() && t.has_storage()) bytes += t.storage().nbytes();
  }
  for (const at::Tensor& t : h.before) bytes += t.nbytes();
  for (const c10::Storage& st : e.forward) {
    if (st.unsafeGetStorageImpl() != nullptr) bytes += st.nbytes();
  }
  return bytes;
}

std::unique_ptr<TensorHold> Reference::hold(Entry& e) {
  if (held_ops_ < kHeldOps && held_bytes_ + e.held_bytes <= held_bytes_bound_) {
    ++held_ops_;
    held_bytes_ += e.held_bytes;
    return nullptr;
  }
  // Not held: let go by the caller, after mu_.
  std::unique_ptr<TensorHold> gone = std::move(e.op->hold);
  gone->storages = std::move(e.forward);
  e.forward.clear();
  e.held_bytes = 0;
  e.released = true;
  released_.fetch_add(1, std::memory_order_relaxed);
  return gone;
}

void Reference::letGo(Entry& e) {
  // The program's tensors and storages are let go on an op thread
  // (finish()): the last reference to one with a Python object takes the
  // GIL, which this thread must never wait for (the program may hold it
  // while it waits for this thread, at exit). They go there, and the
  // counts down, once per batch of records judged (settleLocked()).
  if (!e.forward.empty()) {
    // With the record's own hold where it has one: a hold made here would be
    // freed on an op thread, another arena's.
    if (!e.op || !e.op->hold) gone_.push_back(std::make_unique<TensorHold>());
    (e.op && e.op->hold ? *e.op->hold : *gone_.back()).storages = std::move(e.forward);
    e.forward.clear();
  }
  if (e.op && e.op->hold) gone_.push_back(std::move(e.op->hold));
  if (e.released) return;
  e.released = true;
  ++gone_ops_;
  gone_bytes_ += e.held_bytes;
}

void Reference::settleLocked() {
  for (std::unique_ptr<TensorHold>& h : gone_) dead_.push_back(std::move(h));
  gone_.clear();
  held_ops_ -= gone_ops_;
  held_bytes_ -= gone_bytes_;
  gone_ops_ = gone_bytes_ = 0;
  // Waiting op threads look again: for room, or for nothing left to judge
  // (records kept back as a find's context are held but judged).
  if (waiting_for_room_ > 0) room_.notify_all();
}

void Reference::nudge(const Entry& e) {
  const bool due = queue_.size() >= kHeldOps / 2 || std::chrono::steady_clock::now() - e.since >= kNudgeAfter;
  if (!due) return;
  for (const DeviceValues& v : e.op->device_values) {
    if (v.batched.flight && !v.batched.flight->launched()) batch_.flushIfOpen(v.batched.flight.get());
  }
}

bool Reference::onHost(const CapturedOp& op) { return op.device_values.empty() && op.events.empty(); }

void Reference::run() {
  Session& s = session_;
  std::vector<Entry> handed;  // swapped with pending_: its capacity goes back to the op threads
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (front_waits_) {
      // Looked at again after kPoll, not at once: no thread spins on a device.
      work_.wait_for(lock, kPoll, [&] { return stop_; });
    } else {
      work_.wait_for(lock, kPoll, [&] { return stop_ || draining_ || waiting_for_room_ > 0; });
    }
    // mu_ is held only to take what was handed over and, below, to count
    // what was judged: the op threads never wait for a judgement.
    handed.swap(pending_);
    const bool draining = draining_;
    const bool stopping = stop_;
    const auto deadline = deadline_;
    lock.unlock();
    for (Entry& e : handed) queue_.push_back(std::move(e));
    handed.clear();
    // The records whose values have arrived, in order.
    size_t judged = 0;
    bool waits = false;
    while (!queue_.empty()) {
      Entry& front = queue_.front();
      bool ready = false;
      try {
        ready = valuesArrived(*front.op);
        if (!ready) {
          if (draining) batch_.flush();
          nudge(front);
          ready = valuesArrived(*front.op);
        }
      } catch (...) {
        ready = true;  // a device error: written without what did not arrive
        s.counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
      }
      if (!ready) {
        waits = true;
        break;
      }
      Entry e = std::move(front);
      queue_.pop_front();
      ++judged;
      Judged j;
      try {
        takeArrivedValues(*e.op);
        j = judge(*e.op);
        // Its record, for its backward record's find: only where its inputs
        // were published, so that the two are kept for as many ops.
        if (e.published && !e.released && holds()) keepForward(*e.op, std::move(j.mine));
      } catch (...) {
        s.counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
      }
      try {
        place(s, std::move(e), j);
      } catch (...) {
        // A bug or no memory must not end the program: this record is lost.
        s.counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
      }
    }
    lock.release();
    lockSpinning(mu_);
    lock = std::unique_lock<std::mutex>(mu_, std::adopt_lock);
    unjudged_ -= judged;
    front_waits_ = waits;
    settleLocked();
    if (judged > 0 || !pending_.empty()) continue;
    if (stopping || (draining && queue_.empty())) return;
    if (draining && std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr,
                   "acc: ACC_REFERENCE: %zu records still without their statistics after 60 s waiting for their "
                   "device at exit; written unjudged\n",
                   queue_.size());
      return;
    }
  }
}

Reference::Judged Reference::judge(CapturedOp& op) {
  Judged j;
  j.mine = withoutBytes(op);
  format::OpRecord& mine = j.mine;
  contents_.resolve(mine);
  const format::OpRecord* theirs = reader_->find(mine);
  if (theirs == nullptr) {
    ++unmatched_;
    return j;
  }
  analyzer::RecordComparison& r = j.comparison;
  r.name = op.name;
  r.op = op.op;
  r.grad_fn = op.grad_fn;
  r.has_module = op.has_module;
  r.module = op.module;
  r.pass = op.pass;
  r.step = op.step;
  r.index0 = theirs->index;
  r.index1 = op.index;
  // DIR0 the reference, DIR1 this run: as `acc-analyzer compare REF DUT`.
  r.tensors = analyzer::compareRecordsNow(*theirs, mine, thresholds_);
  origin_judge_.judge(r);
  ++judged_;
  if (r.verdict == analyzer::Verdict::Fail) {
    ++failing_;
    if (first_failing_.empty()) first_failing_ = op.name;
  }
  if (!analyzer::isGradientRecord(r)) {
    j.origin = r.origin;
    j.undecided = !r.origin && r.replay.state == analyzer::ReplayState::MayAmplify;
  }
  if (j.origin) ++origins_seen_;
  if (j.undecided) ++undecided_seen_;
  return j;
}

void Reference::place(Session& s, Entry e, Judged& j) {
  // finds_ changes here, on the judge's thread, under result_mu_, which is
  // never held while records are written: the writer thread, which a full
  // queue waits for, takes it for the manifest. Origins up to ACC_REFERENCE_MAX; as many records whose statistics
  // cannot tell a wrong kernel from amplification, which replay then judges.
  const bool room = origins_ < max_finds_;
  if ((j.origin && room) || (j.undecided && room && undecided_ < max_finds_)) {
    for (Entry& c : before_) write(s, c, /*level2=*/true);
    const size_t before = before_.size();
    before_.clear();
    (j.origin ? origins_ : undecided_) += 1;
    noteFind(s, *e.op, j, e, before);
    if (e.op->pass == format::Pass::Backward && !e.released && level_ < 2) writeForward(s, e);
    const uint64_t without = write(s, e, /*level2=*/true);
    {
      std::lock_guard<std::mutex> lock(result_mu_);
      finds_.back()["tensors_without_data"] = without;
    }
    after_left_ = context_;
    if (origins_ >= max_finds_ && after_left_ == 0) holding_.store(false);
    return;
  }
  if (after_left_ > 0) {
    --after_left_;
    {
      std::lock_guard<std::mutex> lock(result_mu_);
      finds_.back()["context_after"] = context_ - after_left_;
    }
    write(s, e, /*level2=*/true);
    if (after_left_ == 0 && origins_ >= max_finds_) holding_.store(false);
    return;
  }
  if (context_ > 0 && room && !e.released && e.op->hold) {
    before_.push_back(std::move(e));
    if (before_.size() > context_) {
      write(s, before_.front(), /*level2=*/false);
      before_.pop_front();
    }
    return;
  }
  // In the order they finished: what was kept back first.
  for (Entry& c : before_) write(s, c, /*level2=*/false);
  before_.clear();
  write(s, e, /*level2=*/false);
}

uint64_t Reference::write(Session& s, Entry& e, bool level2) {
  if (!e.op) return 0;
  const bool held = level2 && level_ < 2 && !e.released && e.op->hold && e.op->hold->tensors.size() == e.op->tensors.size();
  if (!held) {
    letGo(e);
    emitRecord(s, std::move(e.op));
    return 0;
  }
  const CapturedOp& op = *e.op;
  const TensorHold& h = *op.hold;
  CaptureGuard guard;
  auto r = std::make_unique<CapturedOp>();
  static_cast<format::OpRecord&>(*r) = static_cast<const format::OpRecord&>(op);
  r->tensors.clear();
  uint64_t metadata_only = 0;
  for (size_t i = 0; i < op.tensors.size(); ++i) {
    const format::Tensor& ft = op.tensors[i];
    const at::Tensor* t = &h.tensors[i];
    // An in-place op's overwritten input: the copy of what it held.
    for (size_t k = 0; k < h.overwritten.size() && k < h.before.size(); ++k) {
      if (h.overwritten[k] == i) t = &h.before[k];
    }
    const bool copy = t != &h.tensors[i];
    // Still what the op saw or made: not written since.
    const bool intact = copy || (t->defined() && !ft.uninitialized && h.versions[i] != kNoVersion &&
                                 versionOf(*t) == h.versions[i]);
    try {
      if (intact && readable(*t)) {
        format::Tensor& whole = captureWhole(*t, ft, *r);
        // A content it defines keeps its id (later records refer to it:
        // contents are referable from the op's end, finish()); one it
        // refers to is written again whole, without one.
        if (!ft.content_ref) whole.content = ft.content;
        continue;
      }
    } catch (...) {
      s.counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
    }
    if (!ft.uninitialized && ft.has_stats) ++metadata_only;
    copyTensor(op, i, *r);  // written since, or unreadable: as captured
  }
  markCopies(*r);
  letGo(e);
  record_pool::recycle(std::move(e.op));
  emitRecord(s, std::move(r));
  return metadata_only;
}

bool Reference::publishForward(const CapturedOp& op) {
  const TensorHold& h = *op.hold;
  if (h.tensors.size() != op.tensors.size()) return false;
  // Only an op that autograd recorded has a backward record to come (an
  // optimizer's, under no_grad, has none).
  bool recorded = false;
  for (size_t i = 0; i < op.tensors.size() && !recorded; ++i) {
    const at::Tensor& t = h.tensors[i];
    recorded = op.tensors[i].role == Role::Output && t.defined() && t.requires_grad() && t.grad_fn() != nullptr;
  }
  if (!recorded) return false;
  const ForwardKey key = forwardKey(op.step, op.name);
  std::lock_guard<std::mutex> lock(fwd_mu_);
  // The oldest entry's node and vectors serve the new one: no allocation
  // per forward op once kForwards are kept.
  auto it = forwards_.find(key);
  if (it == forwards_.end()) {
    if (forward_order_.size() >= kForwards) {
      auto node = forwards_.extract(forward_order_.front());
      forward_order_.pop_front();
      if (!node.empty()) {
        node.key() = key;
        it = forwards_.insert(std::move(node)).position;
      }
    }
    if (it == forwards_.end()) it = forwards_.try_emplace(key).first;
    forward_order_.push_back(key);
  }
  std::vector<WeakInput>& inputs = it->second;
  inputs.resize(op.tensors.size());
  for (size_t i = 0; i < op.tensors.size(); ++i) {
    const at::Tensor& t = h.tensors[i];
    WeakInput& w = inputs[i];
    w.kept = op.tensors[i].role == Role::Input && t.defined() && t.has_storage() && h.versions[i] != kNoVersion &&
             readable(t);
    if (!w.kept) {
      w.storage = c10::weak_intrusive_ptr<c10::StorageImpl>(c10::intrusive_ptr<c10::StorageImpl>());
      w.counter.reset();
      continue;
    }
    w.storage = t.storage().getWeakStorageImpl();
    w.options = t.options();
    w.sizes.assign(t.sizes().begin(), t.sizes().end());
    w.strides.assign(t.strides().begin(), t.strides().end());
    w.offset = t.storage_offset();
    w.counter = t.unsafeGetTensorImpl()->version_counter();
    w.version = h.versions[i];
  }
  return true;
}

void Reference::keepForward(const CapturedOp& op, format::OpRecord meta) {
  const ForwardKey key = forwardKey(op.step, op.name);
  if (forward_meta_.insert_or_assign(key, std::move(meta)).second) forward_meta_order_.push_back(key);
  while (forward_meta_order_.size() > kForwards) {
    forward_meta_.erase(forward_meta_order_.front());
    forward_meta_order_.pop_front();
  }
}

std::vector<c10::Storage> Reference::forwardInputs(const CapturedOp& backward) const {
  std::vector<c10::Storage> out;
  std::lock_guard<std::mutex> lock(fwd_mu_);
  auto it = forwards_.find(forwardKey(backward.step, backward.forward_name));
  if (it == forwards_.end()) return out;
  out.resize(it->second.size());
  for (size_t i = 0; i < it->second.size(); ++i) {
    const WeakInput& w = it->second[i];
    if (!w.kept || !w.counter || w.counter->current_version() != w.version) continue;
    // Its storage only: the tensor is made on it for a find (writeForward()).
    if (c10::intrusive_ptr<c10::StorageImpl> storage = w.storage.lock()) out[i] = c10::Storage(std::move(storage));
  }
  return out;
}

void Reference::writeForward(Session& s, const Entry& backward) {
  if (backward.forward.empty()) return;
  const ForwardKey key = forwardKey(backward.op->step, backward.op->forward_name);
  auto meta = forward_meta_.find(key);
  if (meta == forward_meta_.end()) return;
  std::vector<WeakInput> inputs;
  {
    std::lock_guard<std::mutex> lock(fwd_mu_);
    auto it = forwards_.find(key);
    if (it == forwards_.end()) return;
    inputs = it->second;
  }
  const format::OpRecord& m = meta->second;
  if (inputs.size() != m.tensors.size()) return;
  CaptureGuard guard;
  auto r = std::make_unique<CapturedOp>();
  static_cast<format::OpRecord&>(*r) = m;
  r->name += format::kCapturedSuffix;
  r->index = s.nextIndex();
  r->tensors.clear();
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const format::Tensor& ft = m.tensors[i];
    const WeakInput& w = inputs[i];
    try {
      // Still what the forward op read: its counter has not moved since.
      if (i < backward.forward.size() && backward.forward[i].unsafeGetStorageImpl() != nullptr && w.counter &&
          w.counter->current_version() == w.version) {
        // A tensor on the storage, made without an op (set_ is not every
        // device's): its geometry, no autograd.
        auto impl = c10::make_intrusive<c10::TensorImpl>(
            c10::Storage(backward.forward[i]), c10::DispatchKeySet(w.options.computeDispatchKey()),
            w.options.dtype());
        impl->set_sizes_and_strides(w.sizes, w.strides);
        impl->set_storage_offset(w.offset);
        captureWhole(at::Tensor(std::move(impl)), ft, *r);
        continue;
      }
    } catch (...) {
      s.counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
    }
    format::Tensor kept = ft;  // let go or written since: as the forward's record has it,
    kept.content_ref = kept.content != 0;  // whose contents it refers to
    r->tensors.push_back(std::move(kept));
  }
  markCopies(*r);
  emitRecord(s, std::move(r));
}

void Reference::noteFind(Session& s, const CapturedOp& op, const Judged& j, const Entry& e, size_t before) {
  const analyzer::RecordComparison& r = j.comparison;
  std::string reason;
  for (const analyzer::TensorPair& p : r.tensors) {
    if (p.verdict == analyzer::Verdict::Fail && !p.reason.empty()) {
      reason = p.reason;
      break;
    }
  }
  const bool held = !e.released && op.hold && level_ < 2;
  nlohmann::json find = {{"kind", j.origin ? "origin" : "undecided"},
                    {"record", op.name},
                    {"op", op.op},
                    {"pass", op.pass == format::Pass::Backward ? "bwd" : "fwd"},
                    {"step", op.step},
                    {"module", op.module},
                    {"input_error", r.input_error},
                    {"output_error", r.output_error},
                    {"reason", reason},
                    {"may_amplify", j.undecided ? r.replay.reason : std::string()},
                    {"tensors_held", held || level_ >= 2},
                    {"context_before", before},
                    {"context_after", 0}};
  {
    std::lock_guard<std::mutex> lock(result_mu_);
    finds_.push_back(std::move(find));
  }
  const std::string how = "its outputs differ from the reference's by " + shortNumber(r.output_error) + " (" +
                          (reason.empty() ? std::string("statistics") : reason) + ") where its inputs differ by " +
                          shortNumber(r.input_error);
  const std::string written =
      held || level_ >= 2
          ? "written at level 2 with up to " + std::to_string(context_) + " ops before and after it"
          : "its tensors were let go before its statistics arrived (more than " + std::to_string(kHeldOps) +
                " ops or ACC_BUFFER_MB awaited their device), so it is written with statistics only";
  if (j.origin) {
    std::fprintf(stderr, "acc: ACC_REFERENCE: %s (%s) is where this run leaves the reference: %s; %s to %s\n",
                 op.name.c_str(), placeOf(op).c_str(), how.c_str(), written.c_str(), s.dir().c_str());
  } else {
    std::fprintf(stderr,
                 "acc: ACC_REFERENCE: %s (%s): %s; statistics cannot tell a wrong kernel from amplification here "
                 "(%s): %s, for replay to tell\n",
                 op.name.c_str(), placeOf(op).c_str(), how.c_str(), r.replay.reason.c_str(), written.c_str());
  }
}

void Reference::drain(Session& s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
    // A device that never finishes its work must not hang the exit.
    deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  }
  work_.notify_all();
  room_.notify_all();
  if (thread_.joinable()) thread_.join();
  // What the judge left: records a device never completed, and the context
  // kept back for a find that did not come.
  std::deque<Entry> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(queue_);
    for (Entry& e : pending_) left.push_back(std::move(e));
    pending_.clear();
  }
  for (Entry& e : left) write(s, e, false);
  for (Entry& e : before_) write(s, e, false);
  before_.clear();
  {
    std::deque<std::unique_ptr<TensorHold>> dead;
    {
      std::lock_guard<std::mutex> lock(mu_);
      settleLocked();
      dead.swap(dead_);
    }
  }
  std::lock_guard<std::mutex> result(result_mu_);
  counts_ = {{"judged", judged_},
             {"unmatched", unmatched_},
             {"failing", failing_},
             {"origins", origins_seen_},
             {"undecided", undecided_seen_},
             {"first_failing", first_failing_},
             {"released", released_.load()},
             {"reference_records_read", reader_->recordsRead()},
             {"reference_records_unmatched", reader_->unasked()},
             {"reference_corrupt", reader_->corrupt()}};
}

nlohmann::json Reference::toJson() const {
  std::lock_guard<std::mutex> lock(result_mu_);
  nlohmann::json j = {{"source", file_}, {"finds", finds_}};
  if (!counts_.is_null()) j["counts"] = counts_;
  return j;
}

}  // namespace acc::recorder
