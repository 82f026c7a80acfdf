// One T per thread, on the heap, reached through one pointer-sized
// thread-local. libacc_core.so is opened with dlopen, so glibc places its
// thread-locals in static TLS (read at a fixed offset from %fs) only when
// the whole block fits the few hundred bytes glibc keeps for late modules;
// otherwise every access is a call to __tls_get_addr (thousands a step on
// the transformer LM; docs/guide/performance.md, "Per op"). The library is
// built with TLS descriptors (-mtls-dialect=gnu2, recorder/CMakeLists.txt),
// which take the static place where it is free and fall back to the call
// where it is not. So per-thread state larger than a few words lives here.
// The manifest says where glibc put the block (`thread_locals`,
// threadLocalsPlace below), and Recording.ThreadLocalsInStaticTls fails
// when it outgrows the room.
#pragma once

#include <cxxabi.h>

#include <new>

namespace acc::recorder {

// Where this library's thread-locals are: "static" (an access is a load at
// an offset from the thread pointer), "dynamic" (a call into glibc: no
// static TLS was left when the library was loaded), or "unknown" (another
// architecture).
const char* threadLocalsPlace();

template <typename T>
class PerThread {
 public:
  // This thread's T, made at the first call; null once the thread's exit
  // destroyed it (ops may still run while thread-locals are torn down).
  static T* get() {
    if (T* p = ptr_) return p;
    return gone_ ? nullptr : make();
  }

 private:
  // Registered with the C++ runtime's per-thread exit list directly: a
  // function-local thread_local owner would add a guard and itself to the
  // block, 16 bytes per T.
  // Null where memory ran out: callers go on without (acc never fails the
  // op it observes).
  [[gnu::noinline]] static T* make() noexcept {
    T* p = new (std::nothrow) T();
    if (p == nullptr) return nullptr;
    // The last argument names the library the function lives in (any address
    // inside it), which the runtime keeps loaded until the call.
    if (__cxxabiv1::__cxa_thread_atexit(&destroy, nullptr, reinterpret_cast<void*>(&destroy)) != 0) {
      delete p;  // not freed at exit: not kept either
      return nullptr;
    }
    ptr_ = p;
    return p;
  }

  // At the thread's exit: frees its T, then marks it gone.
  static void destroy(void*) {
    T* p = ptr_;
    ptr_ = nullptr;
    gone_ = true;
    delete p;
  }

  static inline thread_local T* ptr_ = nullptr;
  static inline thread_local bool gone_ = false;
};

}  // namespace acc::recorder
