// A sampling profiler of the host, preloaded before acc by bench/host_profile.py,
// for machines where perf is missing and py-spy --native does not finish (a
// CUDA process on the lent H200: four runs of about 10 s each ran past 90 s).
//
// Every HOST_SAMPLER_US microseconds of the process's CPU time (SIGPROF,
// delivered to the thread that used it; the kernel's tick is the shortest
// period, 4 ms at 250 Hz), after HOST_SAMPLER_SKIP_MS milliseconds of it,
// the interrupted thread's return addresses are taken with backtrace() into
// a buffer mapped at start. At exit the process's mappings, then one line
// per sample (the thread id, then the return addresses, innermost first),
// go to HOST_SAMPLER_OUT.pid; host_profile.py names them (addr2line) and
// folds them. Nothing is written to the program's output, and without
// HOST_SAMPLER_OUT the library does nothing.
#include <execinfo.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kDepth = 96;
constexpr size_t kMaxSamples = 200000;
// Per sample: the thread id, the frame count, then kDepth frames.
constexpr size_t kSlot = kDepth + 2;

void** g_buffer = nullptr;
std::atomic<size_t> g_next{0};
std::atomic<bool> g_on{false};
const char* g_out = nullptr;
timer_t g_timer;

void onProf(int, siginfo_t*, void*) {
  if (!g_on.load(std::memory_order_relaxed)) return;
  const int saved = errno;
  const size_t i = g_next.fetch_add(1, std::memory_order_relaxed);
  if (i < kMaxSamples) {
    void** slot = g_buffer + i * kSlot;
    slot[0] = reinterpret_cast<void*>(static_cast<intptr_t>(syscall(SYS_gettid)));
    const int n = backtrace(slot + 2, kDepth);
    slot[1] = reinterpret_cast<void*>(static_cast<intptr_t>(n));
  }
  errno = saved;
}

__attribute__((constructor)) void start() {
  const char* out = std::getenv("HOST_SAMPLER_OUT");
  if (out == nullptr || *out == '\0') return;
  // A file per process (OUT.pid): the program's children (compile workers,
  // data loaders) sample too, and a wrapper that execs it (env, timeout)
  // keeps its pid and never reaches its destructors.
  static char path[4096];
  std::snprintf(path, sizeof path, "%s.%ld", out, static_cast<long>(getpid()));
  g_out = path;
  const char* us_text = std::getenv("HOST_SAMPLER_US");
  long us = us_text != nullptr ? std::strtol(us_text, nullptr, 10) : 1000;
  if (us < 100) us = 100;
  // MAP_NORESERVE: only the pages samples fill are ever backed.
  void* p = mmap(nullptr, kMaxSamples * kSlot * sizeof(void*), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return;
  g_buffer = static_cast<void**>(p);
  // backtrace() loads libgcc_s at its first call: done here, not in the
  // handler, where loading a library could deadlock.
  void* warm[4];
  backtrace(warm, 4);
  struct sigaction sa {};
  sa.sa_sigaction = onProf;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGPROF, &sa, nullptr) != 0) return;
  // A POSIX timer on the process's CPU clock, not setitimer(): execve
  // deletes it, where an itimer would live on into the program a wrapper
  // (env, timeout) execs and kill it with SIGPROF before its handler is set.
  sigevent ev{};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = SIGPROF;
  if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &g_timer) != 0) return;
  itimerspec t{};
  t.it_interval.tv_sec = us / 1000000;
  t.it_interval.tv_nsec = (us % 1000000) * 1000;
  // The first sample after HOST_SAMPLER_SKIP_MS of CPU time: past the
  // program's start (importing torch, a device's initialisation).
  const char* skip_text = std::getenv("HOST_SAMPLER_SKIP_MS");
  const long skip_ms = skip_text != nullptr ? std::strtol(skip_text, nullptr, 10) : 0;
  if (skip_ms > 0) {
    t.it_value.tv_sec = skip_ms / 1000;
    t.it_value.tv_nsec = (skip_ms % 1000) * 1000000;
  } else {
    t.it_value = t.it_interval;
  }
  g_on.store(true);
  timer_settime(g_timer, 0, &t, nullptr);
}

// Writes the process's mappings, then the samples as return addresses:
// host_profile.py places them in their objects (dladdr here would search
// every object's symbols for each of millions of frames).
__attribute__((destructor)) void finish() {
  if (!g_on.exchange(false)) return;
  timer_delete(g_timer);
  FILE* f = std::fopen(g_out, "w");
  if (f == nullptr) return;
  if (FILE* maps = std::fopen("/proc/self/maps", "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, maps) != nullptr) std::fprintf(f, "map %s", line);
    std::fclose(maps);
  }
  const size_t taken = g_next.load();
  const size_t n = taken < kMaxSamples ? taken : kMaxSamples;
  for (size_t i = 0; i < n; ++i) {
    void** slot = g_buffer + i * kSlot;
    std::fprintf(f, "sample %ld", static_cast<long>(reinterpret_cast<intptr_t>(slot[0])));
    const int frames = static_cast<int>(reinterpret_cast<intptr_t>(slot[1]));
    // Frame 0 is the handler, frame 1 the signal trampoline.
    for (int k = 2; k < frames; ++k) std::fprintf(f, " %lx", static_cast<unsigned long>(reinterpret_cast<uintptr_t>(slot[2 + k])));
    std::fputc('\n', f);
  }
  if (taken > n) std::fprintf(f, "dropped %zu\n", taken - n);
  std::fclose(f);
}

}  // namespace
