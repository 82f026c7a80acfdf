// ACC_REFERENCE=DIR: the run under test judges each of its records against
// a reference recording of the same program as it goes, and writes the
// first origins of a divergence at level 2, so that one run names and
// confirms the op instead of three.
//
// Records are captured at the configured level (1: statistics) with their
// tensors held (TensorHold) and handed to a thread of the judge's own. When
// a record's statistics are on the host (CPU at once; a device's in their
// batch, read once an event says they arrived, so no op waits for its
// device), it is matched to the reference's record by step, op, pass,
// shapes and occurrence (reference_reader.h) and judged as compare judges
// level-1 pairs: its tensor pairs by compare's metrics and thresholds, the
// record by compare's origin rule (analyzer/judge, compiled into the
// recorder). An origin, or a record whose statistics cannot tell a wrong
// kernel from amplification ("undecided"), is a find: it is written at
// level 2 from the tensors it holds (an in-place op's overwritten input
// from the copy taken at its start), with the ACC_REFERENCE_CONTEXT records
// before it (kept back, tensors held, until the next is judged) and after
// it at level 2 too. After ACC_REFERENCE_MAX origins nothing more is held;
// records are still judged, for the exit lines. Every other record is
// written as configured.
//
// Tensors are held for at most kHeldOps ops or ACC_BUFFER_MB of storage
// awaiting their statistics; a find beyond that is written with what was
// still held (metadata for the rest), and says so.
#pragma once

#include <c10/util/SmallVector.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "analyzer/judge/origins.h"
#include "analyzer/judge/thresholds.h"
#include "analyzer/read/content_table.h"
#include "env/config.h"
#include "recorder/capture/device/stats_batch.h"
#include "recorder/observe/captured_op.h"
#include "recorder/reference/reference_reader.h"

namespace acc::recorder {

class Session;

class Reference {
 public:
  static constexpr size_t kHeldOps = 256;

  // The reference's records of `rank` (DIR/rankN/records.acc, or
  // DIR/records.acc) and ACC_REFERENCE_THRESHOLDS; null with `error` set
  // when either cannot be used.
  static std::unique_ptr<Reference> open(const env::Config& config, int64_t rank, Session& session,
                                         StatsBatch& batch, std::string& error);

  // Starts the judge's thread.
  Reference(const env::Config& config, Session& session, StatsBatch& batch, std::unique_ptr<ReferenceReader> reader,
            const analyzer::Thresholds& thresholds, std::string file);
  ~Reference();  // stops the thread (drain() has judged what was left)
  Reference(const Reference&) = delete;
  Reference& operator=(const Reference&) = delete;

  // Whether records still hold their tensors (finds are still to be made
  // and the configured level does not write every tensor's values anyway).
  bool holds() const { return holding_.load(std::memory_order_relaxed); }
  // Op thread, at the start of an in-place op (its inputs captured): a copy
  // of what the input it overwrites holds before the op runs.
  void noteOverwrittenInputs(CapturedOp& record);
  // Op thread, when a record is complete: hands it to the judge's thread,
  // which judges records in order once their statistics have arrived and
  // writes them. A CPU program's op waits when kHeldOps records await the
  // judge, rather than let its tensors go.
  void finish(Session& s, std::unique_ptr<CapturedOp> record);
  // At exit: the judge's thread judges and writes every record left (it
  // waits up to 60 s for a device's statistics) and ends.
  void drain(Session& s);

  nlohmann::json toJson() const;  // manifest "reference"
  const std::string& file() const { return file_; }

 private:
  struct Entry {
    std::unique_ptr<CapturedOp> op;
    // A backward record: the storages of its forward op's inputs that were
    // still alive and unchanged when it finished (WeakInput), per tensor of
    // the forward's record (null: not kept), held until it is judged.
    std::vector<c10::Storage> forward;
    std::chrono::steady_clock::time_point since;
    bool released = false;  // tensors not held (bounds) or let go
    bool published = false;  // a forward record whose inputs are in forwards_
    size_t held_bytes = 0;
  };
  // A forward record's inputs, weakly (they cost no memory once autograd
  // lets them go): a backward find's replay runs its forward op again, so
  // its level-2 record goes with a copy of its forward's
  // ({forward}.captured) made from those still alive and unchanged. Kept by
  // storage, geometry and version counter, which autograd's saved copy of
  // an input shares with it (not by TensorImpl: the copy is another one).
  struct WeakInput {
    c10::weak_intrusive_ptr<c10::StorageImpl> storage{c10::intrusive_ptr<c10::StorageImpl>()};
    c10::TensorOptions options;
    c10::SmallVector<int64_t, 6> sizes, strides;
    int64_t offset = 0;
    std::optional<c10::VariableVersion> counter;
    uint32_t version = 0;
    bool kept = false;
  };
  // A forward record by step and name, hashed: op threads look one up per
  // record, and a map of strings cost them 1 us each.
  using ForwardKey = uint64_t;
  static ForwardKey forwardKey(int64_t step, const std::string& name) {
    return std::hash<std::string>{}(name) ^ (static_cast<uint64_t>(step) * 0x9e3779b97f4a7c15ULL);
  }
  static constexpr size_t kForwards = 4096;
  // The judge looks for records every kPoll (op threads wake it only when
  // they wait for room).
  static constexpr auto kPoll = std::chrono::microseconds(200);
  // Each finish() lets go of kDeadPerOp judged records' tensors, and of
  // all beyond kDeadBacklog.
  static constexpr size_t kDeadPerOp = 2, kDeadBacklog = 64;

  struct Judged {
    bool origin = false;     // compare's origin rule names it
    bool undecided = false;  // statistics cannot tell a wrong kernel from amplification
    analyzer::RecordComparison comparison;
    format::OpRecord mine;  // the record judged: no values, its contents resolved
  };

  // The judge's thread: what follows runs there but for heldBytes(),
  // hold() (mu_ held), publishForward() and forwardInputs() (op threads).
  void run();
  static bool onHost(const CapturedOp& op);  // no device values on their way
  Judged judge(CapturedOp& op);
  void place(Session& s, Entry e, Judged& j);
  // Writes e's record; `level2`: from the tensors it holds, where it holds
  // them. Returns the tensors with values written with statistics only.
  uint64_t write(Session& s, Entry& e, bool level2);
  static size_t heldBytes(const Entry& e);
  // Counts e's tensors as held, or returns them to let go when the bounds
  // are reached.
  std::unique_ptr<TensorHold> hold(Entry& e);
  void letGo(Entry& e);      // for settleLocked() to hand to the op threads
  void settleLocked();      // mu_ held: what letGo() collected
  void nudge(const Entry& e);
  // A forward record's inputs, weakly, for its backward record's find: in
  // forwards_ from the forward op's end, so every backward record finds them.
  // False when autograd did not record the op (no backward record to come).
  bool publishForward(const CapturedOp& op);
  void keepForward(const CapturedOp& op, format::OpRecord meta);  // its record, for writeForward
  std::vector<c10::Storage> forwardInputs(const CapturedOp& backward) const;
  // Writes the backward find's forward op at level 2, as {forward}.captured.
  void writeForward(Session& s, const Entry& backward);
  void noteFind(Session& s, const CapturedOp& op, const Judged& j, const Entry& e, size_t before);

  Session& session_;
  const size_t held_bytes_bound_;
  const uint64_t context_, max_finds_;
  const int level_;
  StatsBatch& batch_;
  const analyzer::Thresholds thresholds_;
  const std::string file_;
  std::atomic<bool> holding_;
  // mu_ guards what the op threads share with the judge's thread: the
  // records handed over and what they hold.
  mutable std::mutex mu_;
  std::condition_variable work_;  // records handed over, or draining
  std::condition_variable room_;  // held records let go
  bool stop_ = false, draining_ = false;
  std::chrono::steady_clock::time_point deadline_;
  std::vector<Entry> pending_;  // handed over since the judge last looked, in the order they finished
  size_t unjudged_ = 0;         // handed over, not judged yet
  bool front_waits_ = false;    // the oldest of them awaits its device values
  size_t held_ops_ = 0, held_bytes_ = 0;
  size_t waiting_for_room_ = 0;  // op threads waiting in finish()
  std::atomic<uint64_t> released_{0};
  std::deque<std::unique_ptr<TensorHold>> dead_;  // judged records' holds, for the op threads to let go
  // The forward ops' inputs (op threads; the judge's thread for a find).
  mutable std::mutex fwd_mu_;
  std::unordered_map<ForwardKey, std::vector<WeakInput>> forwards_;  // per tensor of the record
  std::deque<ForwardKey> forward_order_;
  // The judge's thread's own.
  std::deque<Entry> queue_;  // taken from pending_, not judged yet, in order
  std::unique_ptr<ReferenceReader> reader_;
  analyzer::ContentTable contents_;  // this run's contents, for its records' references
  analyzer::OriginJudge origin_judge_;
  std::deque<Entry> before_;  // judged, kept back as the context of a find to come
  std::unordered_map<ForwardKey, format::OpRecord> forward_meta_;  // published forward records, without values
  std::deque<ForwardKey> forward_meta_order_;
  std::vector<std::unique_ptr<TensorHold>> gone_;  // let go since the last settle()
  size_t gone_ops_ = 0, gone_bytes_ = 0;
  uint64_t after_left_ = 0;   // records after a find still to write at level 2
  uint64_t judged_ = 0, unmatched_ = 0, failing_ = 0;
  uint64_t origins_seen_ = 0, undecided_seen_ = 0;  // judged so
  uint64_t origins_ = 0, undecided_ = 0;            // written at level 2 (finds_)
  std::string first_failing_;
  // Apart from mu_: the writer thread reads them for the manifest while a
  // record written under mu_ may wait for the writer.
  mutable std::mutex result_mu_;
  nlohmann::json finds_ = nlohmann::json::array();
  nlohmann::json counts_;
  std::thread thread_;  // last: started once the rest is made
};

}  // namespace acc::recorder
