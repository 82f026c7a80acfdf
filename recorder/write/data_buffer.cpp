#include "recorder/write/data_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace acc::recorder {
namespace {

// Below this a buffer comes from malloc: glibc serves it from its bins
// whatever its threshold, and a block of pages each would waste most of one.
constexpr size_t kPagedFrom = 64 << 10;
constexpr int kFirstOctave = 16;  // log2(kPagedFrom)
constexpr int kOctaves = 48 - kFirstOctave;
// Four sizes per octave (1, 1.25, 1.5 and 1.75 times its power of two): a
// block wastes at most a fifth of itself, and a training step's tensors,
// whose sizes repeat every step, find their blocks again.
constexpr int kPerOctave = 4;
constexpr int kClasses = kOctaves * kPerOctave;
// A kept block serves a buffer up to two octaves smaller: the writer gives
// blocks back in the order they were taken, an op thread asks for the sizes
// of its op's tensors, so a cache that waits for the exact size has the
// wrong ones. Measured on resnet18 + AdamW, 8 steps at level 2 (records
// held back at half the budget: writer.cpp): 2.0 GB of new blocks with
// exact sizes, 1.2 GB within one octave, 0.35 GB within two.
constexpr int kReuseClasses = 2 * kPerOctave;

struct SizeClass {
  int index;
  size_t block;
};

size_t blockOf(int index) {
  const size_t base = size_t{1} << (index / kPerOctave + kFirstOctave);
  return base + static_cast<size_t>(index % kPerOctave) * (base / kPerOctave);
}

// The smallest class whose blocks hold `size` (at least kPagedFrom) bytes.
SizeClass classOf(size_t size) {
  const int k = 63 - __builtin_clzll(size);
  const size_t base = size_t{1} << k;
  const size_t step = base / kPerOctave;
  const int index = (k - kFirstOctave) * kPerOctave + static_cast<int>((size - base + step - 1) / step);
  return {index, blockOf(index)};
}

// The blocks of every buffer, in use or kept. Never destroyed: the writer
// thread may free a buffer while the process exits.
struct Blocks {
  std::mutex mu;
  std::vector<void*> kept[kClasses];
  uint64_t in_use = 0, cached = 0, cap = uint64_t{256} << 20;
  uint64_t peak = 0;  // of in_use + cached
  uint64_t mapped = 0, mapped_bytes = 0;  // blocks taken from the system
  std::atomic<uint64_t> in_use_now{0};  // in_use, read without the lock
};

Blocks& blocks() {
  static Blocks* b = new Blocks;
  return *b;
}

void* mapBlock(size_t block) {
  void* p = mmap(nullptr, block, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

struct Block {
  void* p;
  size_t size;
};

// A block for `c`: a kept one of its size or up to kReuseClasses sizes
// larger (the smallest there is), or a new one after letting go of kept
// blocks, the largest first, until it fits within the cap.
Block takeBlock(const SizeClass& c) {
  std::vector<Block> unmap;
  Block taken{nullptr, c.block};
  {
    Blocks& b = blocks();
    std::lock_guard<std::mutex> lock(b.mu);
    int found = -1;
    for (int i = c.index; i < kClasses && i <= c.index + kReuseClasses && found < 0; ++i) {
      if (!b.kept[i].empty()) found = i;
    }
    if (found >= 0) {
      taken = {b.kept[found].back(), blockOf(found)};
      b.kept[found].pop_back();
      b.cached -= taken.size;
    } else {
      for (int i = kClasses - 1; i >= 0 && b.cached > 0 && b.in_use + b.cached + c.block > b.cap; --i) {
        while (!b.kept[i].empty() && b.in_use + b.cached + c.block > b.cap) {
          unmap.push_back({b.kept[i].back(), blockOf(i)});
          b.kept[i].pop_back();
          b.cached -= blockOf(i);
        }
      }
      ++b.mapped;
      b.mapped_bytes += c.block;
    }
    b.in_use += taken.size;
    b.in_use_now.store(b.in_use, std::memory_order_relaxed);
    b.peak = std::max(b.peak, b.in_use + b.cached);
  }
  for (const Block& u : unmap) munmap(u.p, u.size);
  if (taken.p != nullptr) return taken;
  try {
    taken.p = mapBlock(c.block);
    return taken;
  } catch (...) {
    std::lock_guard<std::mutex> lock(blocks().mu);
    blocks().in_use -= c.block;
    blocks().in_use_now.store(blocks().in_use, std::memory_order_relaxed);
    throw;
  }
}

void giveBlock(void* p, size_t block) {
  const SizeClass c = classOf(block);
  {
    Blocks& b = blocks();
    std::lock_guard<std::mutex> lock(b.mu);
    b.in_use -= block;
    b.in_use_now.store(b.in_use, std::memory_order_relaxed);
    if (c.index < kClasses && b.in_use + b.cached + block <= b.cap) {
      b.kept[c.index].push_back(p);
      b.cached += block;
      return;
    }
  }
  munmap(p, block);
}

}  // namespace

DataBuffer::DataBuffer(size_t size) : size_(size) {
  if (size == 0) return;
  if (size < kPagedFrom) {
    data_ = static_cast<char*>(std::malloc(size));
    if (data_ == nullptr) throw std::bad_alloc();
    return;
  }
  const Block b = takeBlock(classOf(size));
  data_ = static_cast<char*>(b.p);
  block_ = b.size;
}

DataBuffer::DataBuffer(const void* bytes, size_t size) : DataBuffer(size) {
  if (size != 0) std::memcpy(data_, bytes, size);
}

DataBuffer::DataBuffer(DataBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      block_(std::exchange(other.block_, 0)) {}

DataBuffer& DataBuffer::operator=(DataBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    block_ = std::exchange(other.block_, 0);
  }
  return *this;
}

void DataBuffer::release() {
  if (data_ == nullptr) return;
  if (block_ == 0) {
    std::free(data_);
  } else {
    giveBlock(data_, block_);
  }
  data_ = nullptr;
  size_ = 0;
  block_ = 0;
}

void setDataBufferCache(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(blocks().mu);
  blocks().cap = bytes;
}

uint64_t dataBuffersInUse() { return blocks().in_use_now.load(std::memory_order_relaxed); }

DataBufferBytes dataBufferBytes() {
  std::lock_guard<std::mutex> lock(blocks().mu);
  return {blocks().in_use, blocks().cached, blocks().peak, blocks().mapped, blocks().mapped_bytes};
}

}  // namespace acc::recorder
