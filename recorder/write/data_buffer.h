// Level 2's tensor bytes between their capture on an op thread and their
// compression on the writer thread, in memory of acc's own rather than the
// program's heap.
//
// Why: glibc raises its mmap threshold as a program frees large blocks, so
// megabyte-sized buffers come from the main heap among the program's own
// tensors. Level 2 keeps up to ACC_BUFFER_MB of them queued and frees them
// on another thread, out of the order the program allocates in; the heap's
// holes then grow it past what either needs. Measured on resnet18 + AdamW
// (8 steps, torch 1.13): level 2 added 445 MB to the peak with the default
// 256 MiB budget and 76 MB with a 16 MiB one; with glibc's threshold fixed
// (MALLOC_MMAP_THRESHOLD_) it added 70 MB at either, at a third more time
// per step (every buffer's pages faulted in anew). Here large buffers come
// from mmap and go back to a cache of blocks for the next ones, bounded by
// the queue's budget (setDataBufferCache), so their pages are reused and
// the program's heap never holds them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace acc::recorder {

class DataBuffer {
 public:
  DataBuffer() = default;
  // `size` bytes, uninitialised; throws std::bad_alloc.
  explicit DataBuffer(size_t size);
  // A copy of `size` bytes at `bytes`.
  DataBuffer(const void* bytes, size_t size);
  ~DataBuffer() { release(); }
  DataBuffer(DataBuffer&& other) noexcept;
  DataBuffer& operator=(DataBuffer&& other) noexcept;
  DataBuffer(const DataBuffer&) = delete;
  DataBuffer& operator=(const DataBuffer&) = delete;

  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }

 private:
  void release();

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t block_ = 0;  // bytes of its mmap block; 0: from malloc (small)
};

// Bytes of blocks the buffers in use and those kept for reuse may take
// together before a freed block goes back to the system (default 256 MiB):
// the writer sets it to the queue's budget, or 64 MiB where that is less.
void setDataBufferCache(uint64_t bytes);

// Bytes of the blocks of buffers in use (queued, or being captured), read
// without a lock: the writer holds level 2's records back while they pass
// the queue's budget.
uint64_t dataBuffersInUse();

// What the blocks hold now, in buffers and kept for reuse, and the most
// they held together (the manifest's `data_buffers`).
struct DataBufferBytes {
  uint64_t in_use = 0, cached = 0, peak = 0;
  // Blocks taken from the system, and their bytes: each page of a new
  // block costs a fault when first written, so these stay far below the
  // bytes recorded where blocks are reused.
  uint64_t mapped = 0, mapped_bytes = 0;
};
DataBufferBytes dataBufferBytes();

}  // namespace acc::recorder
