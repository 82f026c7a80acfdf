#include "recorder/session/termination.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace acc::recorder {
namespace {

std::atomic<TerminationSignals*> g_instance{nullptr};

bool isHandler(const struct sigaction& a) {
  if (a.sa_flags & SA_SIGINFO) return a.sa_sigaction != nullptr;
  return a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN;
}

uint64_t nowUnixNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);  // async-signal-safe
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

void blockTerminationSignals() {
  sigset_t block;
  sigemptyset(&block);
  for (int sig : kTerminationSignals) sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, nullptr);
}

TerminationSignals::TerminationSignals(SignalNote& note, const std::atomic<int64_t>* step,
                                       std::function<void()> finish)
    : note_(note), step_(step), finish_(std::move(finish)) {
  if (::pipe2(wake_, O_CLOEXEC) != 0 || ::pipe2(done_, O_CLOEXEC) != 0) return;  // no handlers then
  // The finishing thread never takes these signals itself: it must be free
  // to finish while a handler waits for it.
  thread_ = std::thread([this] {
    blockTerminationSignals();
    finishLoop();
  });
  g_instance.store(this);
  for (int k = 0; k < kCount; ++k) {
    struct sigaction current {};
    if (sigaction(kTerminationSignals[k], nullptr, &current) != 0) continue;
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) continue;  // stays ignored
    struct sigaction ours = current;  // the program's mask and flags, when it has a handler
    ours.sa_sigaction = &TerminationSignals::onSignal;
    ours.sa_flags = isHandler(current) ? (current.sa_flags | SA_SIGINFO) : (SA_SIGINFO | SA_RESTART);
    if (!isHandler(current)) sigemptyset(&ours.sa_mask);
    previous_[k] = current;
    installed_[k] = sigaction(kTerminationSignals[k], &ours, nullptr) == 0;
  }
}

TerminationSignals::~TerminationSignals() {
  restore();
  g_instance.store(nullptr);
  if (thread_.joinable()) {
    const char stop = 0;
    if (::write(wake_[1], &stop, 1) == 1) {
      thread_.join();
    } else {
      thread_.detach();
    }
  }
  for (int fd : {wake_[0], wake_[1], done_[0], done_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void TerminationSignals::restore() {
  for (int k = 0; k < kCount; ++k) {
    if (!installed_[k]) continue;
    struct sigaction current {};
    // Only while acc's handler is still the one: a handler the program set
    // since stays.
    if (sigaction(kTerminationSignals[k], nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) &&
        current.sa_sigaction == &TerminationSignals::onSignal) {
      sigaction(kTerminationSignals[k], &previous_[k], nullptr);
    }
    installed_[k] = false;
  }
}

void TerminationSignals::forgetInChild() {
  restore();
  g_instance.store(nullptr);
  // The finishing thread is the parent's; this child has none to join.
  if (thread_.joinable()) thread_.detach();
  for (int* fd : {&wake_[0], &wake_[1], &done_[0], &done_[1]}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void TerminationSignals::finishLoop() {
  char c = 0;
  ssize_t n;
  do {
    n = ::read(wake_[0], &c, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1 || c == 0) return;  // destroyed
  try {
    finish_();
  } catch (...) {
    // The process is ending: its own way matters more than the manifest.
  }
  const char done = 1;
  [[maybe_unused]] ssize_t w = ::write(done_[1], &done, 1);
}

// Async-signal-safe but for the program's own handler, which it was before.
void TerminationSignals::onSignal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  TerminationSignals* self = g_instance.load();
  int k = 0;
  while (k < kCount && kTerminationSignals[k] != sig) ++k;
  if (self == nullptr || k == kCount) return;  // cannot happen: installed with the instance
  const struct sigaction& previous = self->previous_[k];
  const bool handled = isHandler(previous);
  SignalNote& note = self->note_;
  int none = 0;
  // The first signal is noted; one whose default action ends the process
  // replaces a handled one before it.
  if (note.number.compare_exchange_strong(none, sig) || (!handled && !note.default_action.load())) {
    note.number.store(sig);
    note.step.store(self->step_ ? self->step_->load(std::memory_order_relaxed) : 0);
    note.unix_ns.store(nowUnixNs());
    note.default_action.store(!handled);
  }
  if (handled) {
    errno = saved_errno;
    if (previous.sa_flags & SA_SIGINFO) {
      previous.sa_sigaction(sig, info, context);
    } else {
      previous.sa_handler(sig);
    }
    return;
  }
  if (!self->finishing_.exchange(true)) {
    const char wake = 1;
    [[maybe_unused]] ssize_t w = ::write(self->wake_[1], &wake, 1);
  }
  // Wait for the recording to be finished (by whichever signal started it);
  // the byte stays in the pipe for every thread that waits.
  const uint64_t give_up = nowUnixNs() + uint64_t{kFinishTimeoutMs} * 1000000ull;
  for (;;) {
    const uint64_t now = nowUnixNs();
    if (now >= give_up) break;
    pollfd p{self->done_[0], POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>((give_up - now) / 1000000ull) + 1);
    if (r > 0 || (r < 0 && errno != EINTR)) break;
  }
  // The default action, as if acc had never been here.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  pthread_kill(pthread_self(), sig);  // pending: blocked while its handler runs
  pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  errno = saved_errno;  // not reached for SIGTERM and SIGINT
}

}  // namespace acc::recorder
