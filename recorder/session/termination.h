// SIGTERM and SIGINT end a recording as cleanly as an exit does: schedulers
// (a time limit, preemption, torchrun tearing ranks down) and Ctrl-C stop
// training that way, and without this the manifest would stay "running"
// with the counts of its last periodic write.
//
// The program's own handling of the signal stays exactly as it was. A signal
// whose disposition was a handler when recording started (Python's SIGINT
// handler, one the program set before importing torch) goes to that handler
// with the same flags and mask; acc only notes it (manifest "signal"). A
// signal left at its default action first has the recording finished, on a
// thread of acc's (the writer's queue drained, the final manifest written,
// status "terminated"), at most kFinishTimeout, then the default action runs
// from the same thread with the same signal: the process ends as it would
// have, its exit status included. Ignored signals stay ignored, and a handler
// the program installs later replaces acc's as it would replace the default.
#pragma once

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

namespace acc::recorder {

// What the first of those signals was, set from the signal handler.
struct SignalNote {
  std::atomic<int> number{0};
  std::atomic<int64_t> step{0};
  std::atomic<uint64_t> unix_ns{0};
  std::atomic<bool> default_action{false};  // the process ends by it
};

// The signals acc finishes a recording on.
constexpr int kTerminationSignals[] = {SIGTERM, SIGINT};

// acc's own threads (the writer, the statistics helpers) call this first:
// the signals then go to the program's threads, never to one that the
// finishing must join or wait for.
void blockTerminationSignals();

class TerminationSignals {
 public:
  static constexpr int kFinishTimeoutMs = 10000;

  // Installs the handlers; `finish` runs on acc's own thread when a signal's
  // default action is about to end the process. Only one instance lives at
  // a time (the session's); null `step` reads as step 0.
  TerminationSignals(SignalNote& note, const std::atomic<int64_t>* step, std::function<void()> finish);
  // Restores the previous dispositions of the signals still handled by acc.
  ~TerminationSignals();
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

  // In a forked child (no finishing thread): the previous dispositions back.
  void forgetInChild();

 private:
  static void onSignal(int sig, siginfo_t* info, void* context);
  void finishLoop();
  void restore();

  static constexpr int kCount = sizeof(kTerminationSignals) / sizeof(kTerminationSignals[0]);
  struct sigaction previous_[kCount] = {};
  bool installed_[kCount] = {};
  SignalNote& note_;
  const std::atomic<int64_t>* step_;
  std::function<void()> finish_;
  int wake_[2] = {-1, -1};  // handler -> finishing thread
  int done_[2] = {-1, -1};  // finishing thread -> handler
  std::atomic<bool> finishing_{false};
  std::thread thread_;
};

}  // namespace acc::recorder
