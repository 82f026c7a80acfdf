// The CUDA driver and NVRTC, opened with dlopen the first time a CUDA tensor
// needs acc's statistics kernel (cuda_stats.h), so that one libacc.so serves
// CPU-only and CUDA builds of torch alike and links no CUDA library. NVRTC
// comes with torch's CUDA wheels (nvidia/cu13/lib, nvidia/cuda_nvrtc/lib) or
// the CUDA toolkit; the driver with the GPU's driver. The kernel is compiled
// once per device, to PTX for the device's compute capability, and loaded
// into the primary context torch itself uses.
#pragma once

#include <c10/core/Stream.h>

#include <cstdint>
#include <string>

namespace acc::recorder::cuda {

// The loaded libraries, or why they could not be loaded.
struct Libraries {
  bool ok = false;
  std::string nvrtc_path;  // the NVRTC library that compiles the kernel
  int nvrtc_major = 0, nvrtc_minor = 0;
  std::string error;  // when !ok: what was missing, and where it was looked for
};
const Libraries& libraries();

// Compiles `source` (entry `kernel`, extern "C") with NVRTC for `arch`
// ("compute_90") into PTX; the compiler's log in `error` on failure. Needs
// no GPU: the unit tests compile acc's kernel with it.
bool compileToPtx(const std::string& source, const std::string& arch, std::string& ptx, std::string& error);

// acc's statistics kernel (cuda_stats_kernel.h) on CUDA device `index`,
// compiled and loaded on first use; nullptr when it cannot be (`error`
// says why, once). Thread-safe.
void* statsKernel(int index, std::string& error);

// The kernel's description for the manifest ("NVRTC 13.0, compute_90"), or
// why it is not used; empty while no CUDA device asked for it.
std::string statsKernelDescription();

// torch's cudaStream_t for a CUDA c10::Stream, without linking c10_cuda
// (c10::cuda::CUDAStream::stream(), found in the loaded libc10_cuda.so).
// nullptr with `error` set when that library is not loaded.
bool nativeStream(const c10::Stream& stream, void*& handle, std::string& error);

// Launches `kernel` with `grid` x `threads` on `stream` (a cudaStream_t) in
// device `index`'s primary context; false with `error` on a driver error.
bool launch(int index, void* kernel, uint32_t grid, uint32_t threads, void* stream, void** args,
            std::string& error);

}  // namespace acc::recorder::cuda
