// libacc.so: preloaded into every process of a run (shells, compilers, data
// loader workers), so it stays tiny and does not link torch. It waits until
// the process loads libtorch (at start for C++ programs, at `import torch`
// for Python), validates the ACC_* configuration, checks that the running
// torch is the one the recorder core was built against, and loads the core.
#include <cstdint>
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "env/config.h"
#include "preload/torch_identity.h"

namespace {

using DlopenFn = void* (*)(const char*, int);

constexpr const char* kCoreLibrary = "libacc_core.so";
constexpr const char* kCoreBuildInfo = "libacc_core.torch";

enum State : int { kWaiting = 0, kDone = 1 };
std::atomic<int> g_state{kWaiting};
thread_local bool t_inside_shim = false;
// dlopen calls in progress on this thread. Libraries' initializers may call
// dlopen themselves while torch is mapped but not yet initialized: only the
// outermost call, once it returns, may start the recorder.
thread_local int t_dlopen_depth = 0;
// Set once this library's constructor ran. Before that the process is still
// running the initializers of its startup libraries, some of which call
// dlopen while others are not initialized yet: starting then would run
// initializers out of order.
std::atomic<bool> g_constructed{false};

DlopenFn realDlopen() {
  static DlopenFn fn = reinterpret_cast<DlopenFn>(dlsym(RTLD_NEXT, "dlopen"));
  return fn;
}

std::string shimDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&realDlopen), &info) == 0 || info.dli_fname == nullptr) return ".";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The process's command line, its arguments joined by spaces.
std::string commandLine() {
  FILE* f = std::fopen("/proc/self/cmdline", "rb");
  if (f == nullptr) return "";
  char buffer[4096];
  const size_t n = std::fread(buffer, 1, sizeof buffer - 1, f);
  std::fclose(f);
  for (size_t i = 0; i < n; ++i) {
    if (buffer[i] == '\0') buffer[i] = ' ';
  }
  return std::string(buffer, n);
}

// Processes that import torch but run none of the program's ops, so that
// recording them would only leave an empty recording beside the real ones
// (or, for a launcher, take rank 0's directory from the real rank 0):
//  - multiprocessing's forkserver (the default start method from Python
//    3.14), a fresh interpreter that imports the user's main module only to
//    fork workers from (which do not record);
//  - torchrun's launcher (torch.distributed.run, .launch), which starts the
//    ranks with RANK set and has none itself.
bool notAProgram() {
  const std::string cmd = commandLine();
  if (cmd.find("from multiprocessing.forkserver import main") != std::string::npos) return true;
  return std::getenv("RANK") == nullptr &&
         (cmd.find("torch.distributed.run") != std::string::npos ||
          cmd.find("torch.distributed.launch") != std::string::npos || cmd.find("torchrun ") != std::string::npos);
}

void startRecorder(const acc::preload::TorchIdentity& running) {
  acc::env::ParseResult parsed = acc::env::parseProcessEnvironment();
  for (const std::string& w : parsed.warnings) std::fprintf(stderr, "%s\n", w.c_str());
  if (!parsed.ok()) {
    for (const std::string& e : parsed.errors) std::fprintf(stderr, "%s\n", e.c_str());
    std::fprintf(stderr, "acc: recording is off for this run\n");
    return;
  }
  const acc::env::Config& config = parsed.config;
  if (!config.enabled || notAProgram()) return;
  int64_t rank = acc::env::processRank([](const char* n) { return std::getenv(n); });
  if (!config.ranks.empty() &&
      std::find(config.ranks.begin(), config.ranks.end(), rank) == config.ranks.end()) {
    return;
  }
  const std::string dir = shimDirectory();
  auto built = acc::preload::readBuiltFor(dir + "/" + kCoreBuildInfo);
  if (!built) {
    std::fprintf(stderr, "acc: %s/%s is missing (incomplete install); recording is off\n",
                 dir.c_str(), kCoreBuildInfo);
    return;
  }
  if (!acc::preload::sameTorch(running, *built)) {
    std::fprintf(stderr,
                 "acc: this process runs torch %s (%s) but acc was built for torch %s (%s); "
                 "rebuild acc against the running torch (scripts/setup.sh, or cmake with "
                 "-DCMAKE_PREFIX_PATH=<that torch's share/cmake>); recording is off\n",
                 running.version.c_str(), running.library.c_str(), built->version.c_str(),
                 built->library.c_str());
    return;
  }
  const std::string core = dir + "/" + kCoreLibrary;
  void* handle = realDlopen()(core.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::fprintf(stderr, "acc: cannot load %s (%s); recording is off\n", core.c_str(), dlerror());
    return;
  }
  auto start = reinterpret_cast<int (*)()>(dlsym(handle, "acc_core_start"));
  if (start == nullptr) {
    std::fprintf(stderr, "acc: %s has no acc_core_start; recording is off\n", core.c_str());
    return;
  }
  start();
}

void startIfTorchLoaded() {
  if (g_state.load(std::memory_order_acquire) != kWaiting) return;
  auto running = acc::preload::loadedTorch();
  if (!running) return;
  int expected = kWaiting;
  if (!g_state.compare_exchange_strong(expected, kDone)) return;
  t_inside_shim = true;
  startRecorder(*running);
  t_inside_shim = false;
}

// dlopen from inside the shim would search the shim's RUNPATH instead of
// the caller's; when a bare name is not found that way, look along the
// caller's own search path, as the caller's dlopen would have.
void* openFromCallerPath(const char* file, int flags, void* caller) {
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(caller, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 || map == nullptr) {
    return nullptr;
  }
  Dl_serinfo size{};
  if (dlinfo(map, RTLD_DI_SERINFOSIZE, &size) != 0) return nullptr;
  auto* paths = static_cast<Dl_serinfo*>(std::malloc(size.dls_size));
  if (paths == nullptr) return nullptr;
  paths->dls_size = size.dls_size;
  paths->dls_cnt = size.dls_cnt;
  void* handle = nullptr;
  if (dlinfo(map, RTLD_DI_SERINFO, paths) == 0) {
    for (unsigned i = 0; i < paths->dls_cnt && handle == nullptr; ++i) {
      std::string candidate = std::string(paths->dls_serpath[i].dls_name) + "/" + file;
      handle = realDlopen()(candidate.c_str(), flags);
    }
  }
  std::free(paths);
  return handle;
}

// ACC_EAGER=1: torch.compile is turned off through torch's own switch.
// Python copies the environment into os.environ when it starts, and torch
// reads the switch from there when torch._dynamo is imported, so it is set
// here, before the interpreter's main runs. Invalid configurations are
// reported later, once, when torch loads.
void applyEager() {
  // Every process under LD_PRELOAD (shells, compilers) comes here: the
  // whole configuration is parsed only when ACC_EAGER is set at all.
  if (std::getenv("ACC_EAGER") == nullptr) return;
  acc::env::ParseResult parsed = acc::env::parseProcessEnvironment();
  if (!parsed.ok() || !parsed.config.enabled || !parsed.config.eager) return;
  setenv("TORCH_COMPILE_DISABLE", "1", 1);
  setenv("TORCHDYNAMO_DISABLE", "1", 1);
}

__attribute__((constructor)) void onLoad() {
  applyEager();
  // C++ programs linked with libtorch have it loaded (and initialized)
  // before preloaded constructors run.
  g_constructed.store(true);
  startIfTorchLoaded();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void* dlopen(const char* file, int flags) {
  ++t_dlopen_depth;
  void* handle = realDlopen()(file, flags);
  if (handle == nullptr && file != nullptr && std::strchr(file, '/') == nullptr) {
    handle = openFromCallerPath(file, flags, __builtin_return_address(0));
    if (handle == nullptr) realDlopen()(file, flags);  // restore the original dlerror()
  }
  --t_dlopen_depth;
  if (handle != nullptr && !t_inside_shim && t_dlopen_depth == 0 && g_constructed.load()) {
    startIfTorchLoaded();
  }
  return handle;
}
