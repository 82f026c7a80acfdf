#include "recorder/per_thread.h"

#include <cstdint>

namespace acc::recorder {
namespace {
thread_local char t_probe;
}  // namespace

const char* threadLocalsPlace() {
#if defined(__x86_64__) || defined(__aarch64__)
  // A module in static TLS lies within the few KB glibc reserves next to
  // the thread pointer: below it on x86_64, above it (after the thread
  // control block) on aarch64. A dynamic block is one glibc allocated with
  // malloc at the thread's first access, in the heap or an arena, far from
  // the thread pointer (which lies at the top of a thread's stack mapping,
  // or in the main thread's early allocation by the dynamic loader).
  const auto tp = reinterpret_cast<uintptr_t>(__builtin_thread_pointer());
  const auto p = reinterpret_cast<uintptr_t>(&t_probe);
  constexpr uintptr_t kStaticSpan = 64 * 1024;
#if defined(__x86_64__)
  const bool near = p < tp && tp - p <= kStaticSpan;
#else
  const bool near = p > tp && p - tp <= kStaticSpan;
#endif
  return near ? "static" : "dynamic";
#else
  return "unknown";
#endif
}

}  // namespace acc::recorder
