#include "recorder/watch/watch.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <thread>

#include "recorder/capture/cpu/tensor_stats.h"
#include "recorder/capture/device/device_capture.h"
#include "recorder/observe/emit_record.h"
#include "recorder/observe/op_writes.h"
#include "recorder/watch/finite_check.h"
#include "recorder/session/session.h"
#include "recorder/capture/tensor_capture.h"
#include "recorder/write/record_pool.h"

namespace acc::recorder {
namespace {

using format::Role;

bool isInput(Role r) { return r == Role::Input || r == Role::GradIn; }
bool isOutput(Role r) { return r == Role::Output || r == Role::GradOut; }

// How long an op waits for its device tensors' batch before the watch
// starts it (a batch otherwise runs at the step's end or when full).
constexpr auto kNudgeAfter = std::chrono::milliseconds(200);

// What statistics say of a tensor's values: its NaN and Inf counts as a
// Finiteness.
int8_t finitenessOf(const format::Stats& s) {
  return static_cast<int8_t>(s.nan_count > 0   ? Finiteness::NaN
                             : s.inf_count > 0 ? Finiteness::Infinite
                                               : Finiteness::Finite);
}

// What a batch said of a tensor: a Finiteness, or -1 where it could not
// count it (stale, failed).
int8_t finitenessOf(const StatsTicket& t) {
  const std::optional<format::Stats> s = t.flight->stats(t.slot);
  return s ? finitenessOf(*s) : -1;
}

std::string positions(const std::vector<uint32_t>& list) {
  std::string out;
  for (uint32_t p : list) out += (out.empty() ? "" : ", ") + std::to_string(p);
  return out;
}

}  // namespace

void Watch::noteOverwrittenInputs(CapturedOp& r) {
  if (done_.load(std::memory_order_relaxed)) return;
  LazyCaptureGuard guard;
  try {
    forEachOverwrittenInput(r, [&](size_t i) {
      TensorHold& h = *r.hold;
      const at::Tensor& t = h.tensors[i];
      if (!checkable(t)) return;
      h.overwritten.push_back(i);
      if (t.device().is_cpu()) {
        if (!t.is_non_overlapping_and_dense()) guard.need();
        h.overwritten_nonfinite.push_back(static_cast<int8_t>(hostFiniteness(t)));
      } else {
        StatsTicket known;
        int8_t finiteness = -1;
        if (knownBefore(t, known, finiteness)) {
          // The last in-place op's output, unchanged since: its counts
          // (arrived, or on their way) are what this op overwrites.
          h.overwritten_nonfinite.push_back(finiteness);
          if (finiteness < 0) h.overwritten_stats.push_back(std::move(known));
          return;
        }
        // Joins the batch now; the op's write then summarises it first
        // (StatsBatch::beforeOp), so the counts are of what it held. Joining
        // runs no op (a batch it fills takes its own guard), so no guard:
        // each rebuilds the thread's callback list twice (tensor_capture.cpp).
        h.overwritten_nonfinite.push_back(-1);
        h.overwritten_stats.push_back(batch_.add(t));
      }
    });
  } catch (...) {
    // Unknown is what the find reports for an input it could not read.
    r.hold->overwritten.resize(r.hold->overwritten_nonfinite.size());
  }
}

// Entries' vectors, emptied, with their room, for later entries of the
// same thread (an op thread both makes entries and mostly judges them):
// not five allocations an op. A plain array that is never freed: a
// thread's spares outlive its other thread-locals rather than be used
// after their destruction.
namespace {
constexpr int kSpareEntries = 64;
}  // namespace

struct Watch::Spares {
  Entry* entries = nullptr;  // kSpareEntries shells, holding only vectors
  int n = 0;
  static Spares& mine() {
    static thread_local Spares s;
    if (s.entries == nullptr) s.entries = new Entry[kSpareEntries];
    return s;
  }
};

void Watch::swapVectors(Entry& a, Entry& b) {
  a.nonfinite.swap(b.nonfinite);
  a.overwritten.swap(b.overwritten);
  a.device.swap(b.device);
  a.storages.swap(b.storages);
  a.intended.swap(b.intended);
}

Watch::Entry Watch::takeSpare() {
  Entry e;
  Spares& s = Spares::mine();
  if (s.n > 0) swapVectors(e, s.entries[--s.n]);
  return e;
}

void Watch::keepSpare(Entry& e) {
  Spares& s = Spares::mine();
  if (s.n == kSpareEntries) return;
  e.nonfinite.clear();
  e.overwritten.clear();
  e.device.clear();
  e.storages.clear();
  e.intended.clear();
  swapVectors(s.entries[s.n++], e);
}

void Watch::check(Entry& e) {
  CapturedOp& op = *e.op;
  TensorHold& h = *op.hold;
  const size_t n = std::min(op.tensors.size(), h.tensors.size());
  e.nonfinite.assign(op.tensors.size(), -1);
  e.overwritten.assign(op.tensors.size(), false);
  e.storages.assign(op.tensors.size(), nullptr);
  LazyCaptureGuard guard;
  for (size_t i = 0; i < n; ++i) {
    if (isInput(op.tensors[i].role) && h.versions[i] != kNoVersion && versionOf(h.tensors[i]) != h.versions[i]) {
      e.overwritten[i] = true;
    }
    if (h.tensors[i].defined() && h.tensors[i].has_storage()) {
      e.storages[i] = h.tensors[i].storage().unsafeGetStorageImpl();
    }
  }
  // What the overwritten inputs held before the op: known on the CPU, on
  // their way from a device.
  for (size_t k = 0, device = 0; k < h.overwritten.size() && k < h.overwritten_nonfinite.size(); ++k) {
    if (h.overwritten_nonfinite[k] >= 0) {
      e.nonfinite[h.overwritten[k]] = h.overwritten_nonfinite[k];
    } else if (device < h.overwritten_stats.size()) {
      e.device.push_back({h.overwritten[k], std::move(h.overwritten_stats[device++])});
    }
  }
  // zero_grad's zero_ (torch 1.13), ones_like, fill_: the value says what
  // the output holds. On a device its count would join a batch, and the
  // next op to write it (the backward pass accumulating a gradient into
  // the zeros) would pay a launch to count it first.
  const std::optional<double> fill = filledWith(op);
  for (size_t i = 0; i < n; ++i) {
    const format::Tensor& ft = op.tensors[i];
    const at::Tensor& t = h.tensors[i];
    if (!isOutput(ft.role) || ft.uninitialized || !checkable(t)) continue;
    h.versions[i] = versionOf(t);
    // A view of an input the op did not write (view, transpose, a getter)
    // holds what the input holds: no kernel of this op made its values.
    bool view = false;
    for (size_t j = 0; j < n && !view; ++j) {
      view = isInput(op.tensors[j].role) && !e.overwritten[j] && e.storages[j] == e.storages[i];
    }
    if (view) continue;
    if (fill) {
      // nullopt where the type cannot say (complex; a finite value the type
      // rounds to infinity): then counted as any other output.
      if (const std::optional<format::Stats> known = constantStats(*fill, t.scalar_type(), statsElements(t))) {
        e.nonfinite[i] = finitenessOf(*known);
        filled_known_.fetch_add(1, std::memory_order_relaxed);
        if (!t.device().is_cpu()) noteSummarised(t, h.versions[i], StatsTicket(), e.nonfinite[i]);
        continue;
      }
    }
    if (t.device().is_cpu()) {
      if (!t.is_non_overlapping_and_dense()) guard.need();
      e.nonfinite[i] = static_cast<int8_t>(hostFiniteness(t));
    } else {
      // Counted in a batch with the other ops' device tensors: no launch of
      // its own, and no op run here, so no guard (as above).
      e.device.push_back({i, batch_.add(t)});
      // An in-place op's output (the input it wrote, returned): the next
      // in-place op on it learns from this ticket what it overwrites.
      for (size_t j = 0; j < n; ++j) {
        if (isInput(op.tensors[j].role) && e.overwritten[j] && h.tensors[j].is_same(t)) {
          noteSummarised(t, h.versions[i], e.device.back().stats);
          break;
        }
      }
    }
  }
  h.overwritten_stats.clear();
}

// An entry whose batch has arrived keeps what it said, not the ticket
// (which keeps the batch's buffers alive).
void Watch::settle(Summarised& s) {
  if (s.ticket.flight && s.ticket.flight->arrived()) {
    s.finiteness = finitenessOf(s.ticket);
    s.ticket = StatsTicket();
  }
}

bool Watch::knownBefore(const at::Tensor& t, StatsTicket& ticket, int8_t& finiteness) {
  const uint32_t version = versionOf(t);
  if (version == kNoVersion) return false;
  std::lock_guard<std::mutex> lock(summarised_mu_);
  auto it = summarised_.find(t.unsafeGetTensorImpl());
  if (it == summarised_.end()) return false;
  Summarised& s = it->second;
  if (s.impl.expired() || s.version != version || s.data != t.data_ptr()) return false;
  settle(s);
  if (!s.ticket.flight && s.finiteness < 0) return false;  // not counted: summarised anew
  ticket = s.ticket;
  finiteness = s.ticket.flight ? -1 : s.finiteness;
  overwritten_known_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void Watch::noteSummarised(const at::Tensor& t, uint32_t version, const StatsTicket& ticket, int8_t finiteness) {
  if (version == kNoVersion) return;
  std::lock_guard<std::mutex> lock(summarised_mu_);
  summarised_.insert_or_assign(t.unsafeGetTensorImpl(),
                               Summarised{c10::weak_intrusive_ptr<c10::TensorImpl>(t.getIntrusivePtr()), version,
                                          t.data_ptr(), ticket, finiteness});
  if (++notes_since_sweep_ >= kSweepEvery) sweepSummarised();
}

// Tensors gone are forgotten (their TensorImpls' memory is the program's
// again), and arrived tickets become what they said (settle).
void Watch::sweepSummarised() {
  notes_since_sweep_ = 0;
  for (auto it = summarised_.begin(); it != summarised_.end();) {
    Summarised& s = it->second;
    if (s.impl.expired()) {
      it = summarised_.erase(it);
      continue;
    }
    settle(s);
    ++it;
  }
}

bool Watch::arrived(const Entry& e) {
  for (const Pending& p : e.device) {
    if (!p.stats.flight->arrived()) return false;
  }
  return true;
}

void Watch::read(Entry& e) {
  for (const Pending& p : e.device) {
    // Unknown (-1) when the batch could not count it.
    if (const int8_t f = finitenessOf(p.stats); f >= 0) e.nonfinite[p.tensor] = f;
  }
  e.device.clear();
}

void Watch::nudge(const Entry& e) {
  const bool due = pending_.size() >= kHeldOps / 2 || std::chrono::steady_clock::now() - e.since >= kNudgeAfter;
  if (!due) return;
  for (const Pending& p : e.device) {
    if (!p.stats.flight->launched()) batch_.flushIfOpen(p.stats.flight.get());
  }
}

void Watch::finish(Session& s, std::unique_ptr<CapturedOp> record) {
  if (done_.load(std::memory_order_relaxed) || !record->hold) return;
  watched_.fetch_add(1, std::memory_order_relaxed);
  Entry e = takeSpare();
  e.op = std::move(record);
  e.since = std::chrono::steady_clock::now();
  try {
    check(e);
  } catch (...) {
    s.counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
    return;  // this op goes unjudged; the watch goes on
  }
  bool stop = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_.load()) return;
    hold(e);
    pending_.push_back(std::move(e));
    stop = judge(s) && abort_;
  }
  if (stop) {
    std::fprintf(stderr, "acc: ACC_WATCH_ABORT=1: stopping the program (exit status 3)\n");
    Session::stop();
    std::fflush(nullptr);
    std::_Exit(3);
  }
}

bool Watch::judge(Session& s) {
  while (!pending_.empty()) {
    Entry& e = pending_.front();
    bool bad = false;
    try {
      if (!arrived(e)) {
        nudge(e);
        if (!arrived(e)) break;
      }
      read(e);
      for (size_t i = 0; i < e.nonfinite.size(); ++i) {
        bad = bad || (isOutput(e.op->tensors[i].role) && e.nonfinite[i] > 0);
      }
      if (bad && intended(e)) bad = false;
    } catch (...) {
      // A device error: the op stays unjudged.
      s.counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
      letGo(e);
      pending_.pop_front();
      continue;
    }
    if (bad) {
      found(s, e);
      pending_.clear();
      context_.clear();
      held_ops_ = 0;
      held_bytes_ = 0;
      return true;
    }
    // Judged finite: its buffers serve later ops of this thread (the hold's
    // and the record's vectors, the entry's), not malloc and free per op.
    TensorHold::recycle(std::move(e.op->hold));
    if (context_size_ > 0) {
      context_.push_back(std::move(e.op));
      if (context_.size() > context_size_) {
        record_pool::recycle(std::move(context_.front()));
        context_.pop_front();
      }
    } else {
      record_pool::recycle(std::move(e.op));
    }
    letGo(e);
    keepSpare(e);
    pending_.pop_front();
  }
  return false;
}

bool Watch::intended(Entry& e) {
  const CapturedOp& op = *e.op;
  e.intended.assign(e.nonfinite.size(), false);
  bool given = false;
  for (const format::Scalar& a : op.scalars) {
    // doubleText's spellings; quoted strings ("nanmean") are not numbers.
    given = given || (!a.value.empty() && a.value[0] != '"' &&
                      (a.value.find("inf") != std::string::npos || a.value.find("nan") != std::string::npos));
  }
  for (size_t i = 0; i < e.nonfinite.size() && i < e.storages.size(); ++i) {
    if (isInput(op.tensors[i].role) && e.storages[i] != nullptr && isIntended(e.storages[i])) {
      e.intended[i] = true;
      given = true;
    }
  }
  if (!given) return false;
  for (size_t i = 0; i < e.nonfinite.size(); ++i) {
    if (isOutput(op.tensors[i].role) && e.nonfinite[i] == static_cast<int8_t>(Finiteness::NaN)) return false;
  }
  intended_ops_.fetch_add(1, std::memory_order_relaxed);
  const std::vector<at::Tensor>& held = op.hold->tensors;
  for (size_t i = 0; i < e.nonfinite.size() && i < held.size(); ++i) {
    if (!isOutput(op.tensors[i].role) || e.nonfinite[i] <= 0 || isIntended(e.storages[i])) continue;
    while (!intended_.empty() && (intended_.front().expired() || intended_.size() >= kIntended)) {
      intended_.pop_front();
    }
    intended_.push_back(held[i].storage().getWeakStorageImpl());
  }
  return true;
}

bool Watch::isIntended(const c10::StorageImpl* storage) const {
  for (const auto& w : intended_) {
    if (w._unsafe_get_target() == storage && !w.expired()) return true;
  }
  return false;
}

void Watch::hold(Entry& e) {
  TensorHold& h = *e.op->hold;
  size_t bytes = 0;
  for (const at::Tensor& t : h.tensors) {
    if (t.defined() && t.has_storage()) bytes += t.storage().nbytes();
  }
  if (held_ops_ < kHeldOps && held_bytes_ + bytes <= held_bytes_bound_) {
    e.held_bytes = bytes;
    ++held_ops_;
    held_bytes_ += bytes;
  } else {
    h.tensors.clear();
    e.released = true;
  }
}

void Watch::letGo(Entry& e) {
  if (e.released) return;
  --held_ops_;
  held_bytes_ -= e.held_bytes;
  e.released = true;
}

void Watch::found(Session& s, Entry& e) {
  done_.store(true);
  CapturedOp& op = *e.op;
  TensorHold& h = *op.hold;
  CaptureGuard guard;
  const bool held = !e.released && h.tensors.size() == op.tensors.size();
  std::vector<uint32_t> bad_outputs, bad_inputs, intended_inputs, unread_inputs;
  auto r = std::make_unique<CapturedOp>();
  static_cast<format::OpRecord&>(*r) = static_cast<const format::OpRecord&>(op);
  r->tensors.clear();
  for (size_t i = 0; i < op.tensors.size(); ++i) {
    const format::Tensor& ft = op.tensors[i];
    const at::Tensor* t = held ? &h.tensors[i] : nullptr;
    // Still what the op saw or made: not written since (by the op itself,
    // for inputs, or by a later op).
    const bool intact = t != nullptr && t->defined() && !e.overwritten[i] && !ft.uninitialized &&
                        h.versions[i] != kNoVersion && versionOf(*t) == h.versions[i];
    try {
      if (isInput(ft.role) && !ft.uninitialized && e.nonfinite[i] < 0 && !e.overwritten[i]) {
        if (intact && checkable(*t)) {
          e.nonfinite[i] = static_cast<int8_t>(finitenessNow(*t));
        } else if (t == nullptr || checkable(*t)) {
          unread_inputs.push_back(ft.position);
        }
      }
      if (e.nonfinite[i] > 0) {
        if (!isInput(ft.role)) bad_outputs.push_back(ft.position);
        else (e.intended[i] ? intended_inputs : bad_inputs).push_back(ft.position);
      }
      if (intact && readable(*t)) {
        captureWhole(*t, ft, *r);
        continue;
      }
    } catch (...) {
      s.counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
    }
    copyTensor(op, i, *r);  // overwritten, or let go: as captured
  }
  markCopies(*r);
  const size_t context = context_.size();
  for (std::unique_ptr<CapturedOp>& c : context_) emitRecord(s, std::move(c));
  const bool made = bad_inputs.empty();
  nlohmann::json result = {
      {"status", made ? "found" : "handed_in"},
      {"record", op.name},
      {"op", op.op},
      {"pass", op.pass == format::Pass::Backward ? "bwd" : "fwd"},
      {"step", op.step},
      {"module", op.module},
      {"nonfinite_outputs", bad_outputs},
      {"nonfinite_inputs", bad_inputs},
      {"intended_inputs", intended_inputs},
      {"unread_inputs", unread_inputs},
      {"context_records", context},
      {"tensors_held", held},
  };
  const std::string where = placeOf(op);
  const std::string unread =
      !held ? "; its tensors were let go before its check arrived (more than " + std::to_string(kHeldOps) +
                  " ops or " + std::to_string(held_bytes_bound_ >> 20) + " MiB, ACC_BUFFER_MB, awaited their device), so it is written with metadata only"
      : unread_inputs.empty() ? ""
                              : "; input " + positions(unread_inputs) + " could not be read back";
  if (made) {
    const std::string from = intended_inputs.empty()
                                 ? "finite inputs"
                                 : "inputs finite but for the program's own infinities in input " +
                                       positions(intended_inputs) + " (a mask)";
    std::fprintf(stderr,
                 "acc: ACC_WATCH: %s (%s) made the first NaN/Inf, in output %s, from %s%s; "
                 "written at level 2 with the %zu ops before it to %s\n",
                 op.name.c_str(), where.c_str(), positions(bad_outputs).c_str(), from.c_str(), unread.c_str(),
                 context, s.dir().c_str());
  } else {
    std::fprintf(stderr,
                 "acc: ACC_WATCH: the first NaN/Inf was handed to %s (%s) in input %s, made by no op the "
                 "watch saw (data, or a value from before the watch)%s; written at level 2 with the %zu ops "
                 "before it to %s\n",
                 op.name.c_str(), where.c_str(), positions(bad_inputs).c_str(), unread.c_str(), context,
                 s.dir().c_str());
  }
  emitRecord(s, std::move(r));
  std::lock_guard<std::mutex> lock(result_mu_);
  result_ = std::move(result);
}

void Watch::drain(Session& s) {
  // A device that never finishes its work must not hang the exit.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::unique_lock<std::mutex> lock(mu_);
  while (!done_.load() && !pending_.empty()) {
    const size_t before = pending_.size();
    if (judge(s)) return;
    if (pending_.size() == before) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "acc: ACC_WATCH: %zu ops still unchecked after 60 s waiting for their device at exit\n",
                     pending_.size());
        return;
      }
      // The device is still working on the front op's check.
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      lock.lock();
    }
  }
}

nlohmann::json Watch::toJson() const {
  nlohmann::json j;
  {
    std::lock_guard<std::mutex> lock(result_mu_);
    j = result_.is_null() ? nlohmann::json{{"status", "none"}} : result_;
  }
  j["ops_watched"] = watched_.load();
  j["intended_ops"] = intended_ops_.load();
  j["overwritten_known"] = overwritten_known_.load();
  j["filled_known"] = filled_known_.load();
  return j;
}

std::string Watch::summary() const {
  if (done_.load()) return "";
  const uint64_t intended = intended_ops_.load();
  return "acc: ACC_WATCH: no NaN or infinity in the " + std::to_string(watched_.load()) + " ops watched" +
         (intended == 0 ? std::string()
                        : " but for the program's own infinities (masks) in " + std::to_string(intended) + " of them");
}

}  // namespace acc::recorder
