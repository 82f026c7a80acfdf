#include "recorder/capture/device/cuda_driver.h"

#include <dlfcn.h>
#include <glob.h>
#include <link.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "recorder/capture/device/cuda_stats_kernel.h"
#include "recorder/capture/device/cuda_stats_kernel_source.h"

namespace acc::recorder::cuda {
namespace {

// The few driver and NVRTC entry points acc calls, with the C types of
// cuda.h and nvrtc.h spelled out: acc builds without CUDA's headers.
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using nvrtcResult = int;
using nvrtcProgram = void*;
constexpr int kComputeMajor = 75, kComputeMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_*

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxPushCurrent)(CUcontext);
  CUresult (*cuCtxPopCurrent)(CUcontext*);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             void*, void**, void**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
};

struct Nvrtc {
  nvrtcResult (*nvrtcVersion)(int*, int*);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                    const char* const*);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
};

template <typename F>
bool resolve(void* lib, const char* name, F& f, std::string& missing) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (f == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  return f != nullptr;
}

// Paths of the loaded shared objects whose file name starts with `prefix`.
std::vector<std::string> loadedNamed(const char* prefix) {
  struct Search {
    const char* prefix;
    std::vector<std::string> found;
  } search{prefix, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
        const char* base = std::strrchr(info->dlpi_name, '/');
        base = base ? base + 1 : info->dlpi_name;
        if (std::strncmp(base, s->prefix, std::strlen(s->prefix)) == 0) s->found.emplace_back(info->dlpi_name);
        return 0;
      },
      &search);
  return search.found;
}

std::vector<std::string> globbed(const std::string& pattern) {
  std::vector<std::string> paths;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  return paths;
}

// Where NVRTC may be, most likely first: already loaded (torch's wheels
// preload it), beside torch's CUDA library in the wheels' nvidia/ folders,
// then the loader's own search path (a CUDA toolkit).
std::vector<std::string> nvrtcCandidates() {
  std::vector<std::string> c = loadedNamed("libnvrtc.so");
  for (const std::string& torch : loadedNamed("libtorch_cuda.so")) {
    const std::string lib = torch.substr(0, torch.rfind('/'));
    for (const char* pattern : {"/../../nvidia/cu*/lib/libnvrtc.so.*[0-9]", "/../../nvidia/cuda_nvrtc/lib/libnvrtc.so.*[0-9]",
                                "/libnvrtc.so.*[0-9]", "/libnvrtc-*.so.*[0-9]"}) {
      for (std::string& p : globbed(lib + pattern)) c.push_back(std::move(p));
    }
  }
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}) c.emplace_back(name);
  for (std::string& p : globbed("/usr/local/cuda/lib64/libnvrtc.so.*[0-9]")) c.push_back(std::move(p));
  return c;
}

struct Loaded {
  Libraries info;
  Driver driver{};
  Nvrtc nvrtc{};
  bool driver_ok = false;
};

Loaded& loaded() {
  static Loaded* const l = [] {
    auto* l = new Loaded;  // never destroyed: kernels may run until the process exits
    std::string missing;
    for (const std::string& path : nvrtcCandidates()) {
      void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) continue;
      Nvrtc& n = l->nvrtc;
      missing.clear();
      bool ok = resolve(lib, "nvrtcVersion", n.nvrtcVersion, missing);
      ok &= resolve(lib, "nvrtcCreateProgram", n.nvrtcCreateProgram, missing);
      ok &= resolve(lib, "nvrtcCompileProgram", n.nvrtcCompileProgram, missing);
      ok &= resolve(lib, "nvrtcGetPTXSize", n.nvrtcGetPTXSize, missing);
      ok &= resolve(lib, "nvrtcGetPTX", n.nvrtcGetPTX, missing);
      ok &= resolve(lib, "nvrtcGetProgramLogSize", n.nvrtcGetProgramLogSize, missing);
      ok &= resolve(lib, "nvrtcGetProgramLog", n.nvrtcGetProgramLog, missing);
      ok &= resolve(lib, "nvrtcDestroyProgram", n.nvrtcDestroyProgram, missing);
      if (ok && n.nvrtcVersion(&l->info.nvrtc_major, &l->info.nvrtc_minor) == 0) {
        l->info.nvrtc_path = path;
        break;
      }
      dlclose(lib);
    }
    if (l->info.nvrtc_path.empty()) {
      l->info.error = "no NVRTC library (libnvrtc.so.*: looked among the loaded libraries, torch's nvidia/ "
                      "wheels, the loader's path and /usr/local/cuda/lib64)";
      return l;
    }
    if (void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
      Driver& d = l->driver;
      missing.clear();
      bool ok = resolve(lib, "cuInit", d.cuInit, missing);
      ok &= resolve(lib, "cuDeviceGet", d.cuDeviceGet, missing);
      ok &= resolve(lib, "cuDeviceGetAttribute", d.cuDeviceGetAttribute, missing);
      ok &= resolve(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, missing);
      ok &= resolve(lib, "cuCtxPushCurrent_v2", d.cuCtxPushCurrent, missing);
      ok &= resolve(lib, "cuCtxPopCurrent_v2", d.cuCtxPopCurrent, missing);
      ok &= resolve(lib, "cuModuleLoadData", d.cuModuleLoadData, missing);
      ok &= resolve(lib, "cuModuleGetFunction", d.cuModuleGetFunction, missing);
      ok &= resolve(lib, "cuLaunchKernel", d.cuLaunchKernel, missing);
      ok &= resolve(lib, "cuGetErrorString", d.cuGetErrorString, missing);
      l->driver_ok = ok && d.cuInit(0) == 0;
      if (!ok) l->info.error = "libcuda.so.1 lacks " + missing;
      else if (!l->driver_ok) l->info.error = "cuInit failed";
    } else {
      l->info.error = "no CUDA driver (libcuda.so.1)";
    }
    l->info.ok = l->driver_ok;
    return l;
  }();
  return *l;
}

std::string driverError(CUresult r) {
  const char* s = nullptr;
  if (loaded().driver.cuGetErrorString != nullptr) loaded().driver.cuGetErrorString(r, &s);
  return "CUDA driver error " + std::to_string(r) + (s ? std::string(" (") + s + ")" : std::string());
}

struct Kernel {
  void* function = nullptr;
  CUcontext context = nullptr;
  std::string error, arch;
};

std::mutex kernels_mutex;
std::map<int, Kernel>& kernels() {
  static auto* k = new std::map<int, Kernel>;
  return *k;
}

// Pushes a device's primary context for the calling thread (the writer's
// has none of its own), pops it on scope exit.
class ContextGuard {
 public:
  explicit ContextGuard(CUcontext ctx) : ok_(loaded().driver.cuCtxPushCurrent(ctx) == 0) {}
  ~ContextGuard() {
    CUcontext ignored = nullptr;
    if (ok_) loaded().driver.cuCtxPopCurrent(&ignored);
  }
  bool ok() const { return ok_; }

 private:
  bool ok_;
};

Kernel compileFor(int index) {
  Kernel k;
  const Loaded& l = loaded();
  if (!l.info.ok) {
    k.error = l.info.error;
    return k;
  }
  const Driver& d = l.driver;
  CUdevice dev = 0;
  int major = 0, minor = 0;
  CUresult r = d.cuDeviceGet(&dev, index);
  if (r == 0) r = d.cuDeviceGetAttribute(&major, kComputeMajor, dev);
  if (r == 0) r = d.cuDeviceGetAttribute(&minor, kComputeMinor, dev);
  if (r == 0) r = d.cuDevicePrimaryCtxRetain(&k.context, dev);
  if (r != 0) {
    k.error = driverError(r);
    return k;
  }
  // The device's own architecture, else older ones an older NVRTC knows
  // (PTX runs on newer devices: the driver compiles it).
  std::string ptx, log;
  const int own = major * 10 + minor;
  for (int cc : {own, 90, 80, 75, 70}) {
    if (cc > own || (cc == own && !k.arch.empty())) continue;  // own tried first, once
    k.arch = "compute_" + std::to_string(cc);
    if (compileToPtx(kStatsKernelSource, k.arch, ptx, log)) break;
    ptx.clear();
  }
  if (ptx.empty()) {
    k.error = "NVRTC could not compile the statistics kernel: " + log;
    return k;
  }
  ContextGuard guard(k.context);
  CUmodule module = nullptr;
  r = guard.ok() ? d.cuModuleLoadData(&module, ptx.c_str()) : -1;
  if (r == 0) r = d.cuModuleGetFunction(&k.function, module, kStatsKernelName);
  if (r != 0) {
    k.error = "loading the statistics kernel: " + driverError(r);
    k.function = nullptr;
  }
  return k;
}

}  // namespace

const Libraries& libraries() { return loaded().info; }

bool compileToPtx(const std::string& source, const std::string& arch, std::string& ptx, std::string& error) {
  const Loaded& l = loaded();
  if (l.info.nvrtc_path.empty()) {
    error = l.info.error;
    return false;
  }
  const Nvrtc& n = l.nvrtc;
  nvrtcProgram program = nullptr;
  if (n.nvrtcCreateProgram(&program, source.c_str(), "acc_tensor_stats.cu", 0, nullptr, nullptr) != 0) {
    error = "nvrtcCreateProgram failed";
    return false;
  }
  const std::string arch_option = "--gpu-architecture=" + arch;
  const char* options[] = {arch_option.c_str(), "--std=c++14", "-default-device"};
  const bool compiled = n.nvrtcCompileProgram(program, 3, options) == 0;
  size_t size = 0;
  if (compiled && n.nvrtcGetPTXSize(program, &size) == 0) {
    ptx.assign(size, '\0');
    n.nvrtcGetPTX(program, ptx.data());
  } else {
    size_t log_size = 0;
    n.nvrtcGetProgramLogSize(program, &log_size);
    std::string log(log_size, '\0');
    if (log_size > 0) n.nvrtcGetProgramLog(program, log.data());
    error = arch + ": " + std::string(log.c_str());
  }
  n.nvrtcDestroyProgram(&program);
  return compiled && !ptx.empty();
}

void* statsKernel(int index, std::string& error) {
  std::lock_guard<std::mutex> lock(kernels_mutex);
  auto it = kernels().find(index);
  if (it == kernels().end()) it = kernels().emplace(index, compileFor(index)).first;
  error = it->second.error;
  return it->second.function;
}

std::string statsKernelDescription() {
  std::lock_guard<std::mutex> lock(kernels_mutex);
  if (kernels().empty()) return "";
  const Kernel& k = kernels().begin()->second;
  if (k.function == nullptr) return "ATen's reductions: " + k.error;
  const Libraries& l = loaded().info;
  return "acc_tensor_stats, NVRTC " + std::to_string(l.nvrtc_major) + "." + std::to_string(l.nvrtc_minor) + ", " +
         k.arch;
}

bool nativeStream(const c10::Stream& stream, void*& handle, std::string& error) {
  // c10::cuda::CUDAStream holds one member, the c10::Stream: its stream()
  // can be called on the c10::Stream itself.
  using StreamOf = void* (*)(const void*);
  static const StreamOf stream_of = []() -> StreamOf {
    void* lib = dlopen("libc10_cuda.so", RTLD_NOW | RTLD_NOLOAD);
    return lib ? reinterpret_cast<StreamOf>(dlsym(lib, "_ZNK3c104cuda10CUDAStream6streamEv")) : nullptr;
  }();
  if (stream_of == nullptr) {
    error = "libc10_cuda.so is not loaded, or lacks c10::cuda::CUDAStream::stream()";
    return false;
  }
  handle = stream_of(&stream);
  return true;
}

bool launch(int index, void* kernel, uint32_t grid, uint32_t threads, void* stream, void** args,
            std::string& error) {
  CUcontext context = nullptr;
  {
    std::lock_guard<std::mutex> lock(kernels_mutex);
    auto it = kernels().find(index);
    if (it != kernels().end()) context = it->second.context;
  }
  ContextGuard guard(context);
  if (!guard.ok()) {
    error = "cannot make device " + std::to_string(index) + "'s context current";
    return false;
  }
  const CUresult r = loaded().driver.cuLaunchKernel(kernel, grid, 1, 1, threads, 1, 1, 0, stream, args, nullptr);
  if (r != 0) error = "launching the statistics kernel: " + driverError(r);
  return r == 0;
}

}  // namespace acc::recorder::cuda
