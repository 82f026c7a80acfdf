// The one recording of this process: configuration, output, counters and
// the state shared by all op threads. Created once when torch is loaded and
// never destroyed, because torch may call acc's callbacks until exit.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "env/config.h"
#include "recorder/observe/backward_links.h"
#include "recorder/capture/content_store.h"
#include "recorder/session/numeric_settings.h"
#include "recorder/override/op_override.h"
#include "recorder/random/random_tape.h"
#include "recorder/observe/selector.h"
#include "recorder/capture/uninitialized_memory.h"
#include "recorder/observe/stack_registry.h"
#include "recorder/capture/device/stats_batch.h"
#include "recorder/session/termination.h"
#include "recorder/reference/reference.h"
#include "recorder/watch/watch.h"
#include "recorder/write/record_batch.h"
#include "recorder/write/writer.h"

namespace acc::recorder {

struct SessionCounts {
  std::atomic<uint64_t> ops_seen{0};  // named ops (the ones that could be recorded)
  std::atomic<uint64_t> recorded{0};
  std::atomic<uint64_t> skipped{0};   // named ops the filters left out
  std::atomic<uint64_t> capture_errors{0};
  // Collectives whose results are awaited (observer.cpp): at exit, those
  // whose work never completed, their records not written.
  std::atomic<int64_t> collectives_pending{0};
};

class Session {
 public:
  // Starts recording into `dir`; returns null after printing why it cannot.
  static Session* start(const env::Config& config, int64_t rank, const std::string& dir);
  // Null until started, and again in a forked child.
  static Session* active();
  // Idempotent; the atexit handler of the process that started the session,
  // and what SIGTERM or SIGINT runs before its default action (termination.h).
  static void stop();
  // Python's atexit: stops the session. A device backend the program
  // imported after torch (an NPU plugin, the test device) unregisters its
  // kernels at C's exit before acc's own handler runs, and the last device
  // statistics and the watch's last judgement need them; and after a signal
  // (an unhandled KeyboardInterrupt) Python ends by it and C's atexit
  // handlers never run. Ops Python runs after its atexit callbacks go
  // unrecorded. A program without Python stops at C's exit.
  static void pythonExiting();

  const env::Config& config() const { return config_; }
  Selector& selector() { return selector_; }
  BackwardLinks& links() { return links_; }
  UninitializedMemory& uninitialized() { return uninitialized_; }
  StackRegistry& stacks() { return *stacks_; }
  SessionCounts& counts() { return counts_; }
  NumericSettings& numerics() { return numerics_; }
  // The NaN/Inf watch (ACC_WATCH=naninf), null when off.
  Watch* watch() { return watch_.get(); }
  // ACC_REFERENCE's judge, null when off.
  Reference* reference() { return reference_.get(); }
  // ACC_RANDOM's tape, null when off (or when it could not be opened).
  RandomTape* random() { return random_.get(); }
  // ACC_OVERRIDE's ops, null when none is named.
  OpOverride* overrides() { return override_.get(); }
  const std::string& dir() const { return dir_; }
  // Null when ACC_DEDUP=0 or at level 0 (no values to deduplicate).
  ContentStore* contents() { return config_.dedup && config_.level >= 1 ? &contents_ : nullptr; }
  // Device statistics in batches (ACC_DEVICE_BATCH=1: of one tensor each);
  // null when nothing is summarised (level 0 without the watch).
  StatsBatch* statsBatch() {
    return config_.level >= 1 || config_.watch != env::Watch::Off ? &stats_batch_ : nullptr;
  }

  // Training step, advanced at the end of every Optimizer.step.
  int64_t step() const { return step_.load(std::memory_order_relaxed); }
  void advanceStep();
  uint64_t nextForwardNumber() { return forward_numbers_.fetch_add(1); }
  uint64_t nextCollectiveNumber() { return collective_numbers_.fetch_add(1); }
  uint64_t nextUnlinkedNumber() { return unlinked_numbers_.fetch_add(1); }
  uint64_t nextIndex() { return indices_.fetch_add(1); }

  // False when the writer dropped the record (and counted it).
  bool emit(std::string record);
  bool emit(std::unique_ptr<QueuedRecord> record);  // filled from blankRecord()
  std::unique_ptr<QueuedRecord> blankRecord() { return writer_->blank(); }
  // The op threads' batches of records (ACC_RECORD_BATCH).
  RecordBatches& batches() { return *batches_; }
  bool emit(std::unique_ptr<InFlightRecord> record);
  void noteDevice(const std::string& device);
  // In a forked child: the signal handlers are the parent's business.
  void forgetSignalsInChild();

 private:
  Session(const env::Config& config, int64_t rank, std::string dir);
  // `last`: the final one (end_time set, the reserved space given back).
  void writeManifest(const char* status, bool last = false);

  env::Config config_;
  int64_t rank_;
  std::string dir_;
  int pid_;
  uint64_t start_ns_;
  Selector selector_;
  BackwardLinks links_;
  UninitializedMemory uninitialized_;
  std::unique_ptr<Writer> writer_;
  std::unique_ptr<RecordBatches> batches_;
  std::unique_ptr<StackRegistry> stacks_;
  SessionCounts counts_;
  NumericSettings numerics_;
  ContentStore contents_;
  StatsBatch stats_batch_;
  std::unique_ptr<Watch> watch_;
  std::unique_ptr<Reference> reference_;
  std::unique_ptr<RandomTape> random_;
  std::string random_error_;  // why ACC_RANDOM is not in effect
  std::unique_ptr<OpOverride> override_;
  std::atomic<int64_t> step_{0};
  std::atomic<uint64_t> forward_numbers_{0};
  std::atomic<uint64_t> collective_numbers_{0};
  std::atomic<uint64_t> unlinked_numbers_{0};
  std::atomic<uint64_t> indices_{0};
  std::mutex devices_mutex_;
  std::set<std::string> devices_;
  std::mutex manifest_mutex_;
  SignalNote signal_;
  std::unique_ptr<TerminationSignals> signals_;
};

}  // namespace acc::recorder
