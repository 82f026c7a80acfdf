// Appends to a file through O_DIRECT where its filesystem takes it, for the
// recorder's level 2, which writes gigabytes. Through the page cache, each
// byte is copied by the kernel and then kept among the program's own cached
// files, which it evicts; on the 2-core VM a buffered write of 3 GB took 4.8 s
// of kernel time against 0.4 s direct, and bounded a level-2 recording's
// steady pace (bench/README.md, "Level-2 bytes").
//
// Bytes are staged in aligned buffers of acc's own; a full one is written,
// whole 4 KiB blocks, by a thread of its own (a direct write waits for the
// device), while the caller fills the next. sync() waits for those, then
// writes what is staged, its last partial block through the cache, so that
// the file holds every byte appended (a reader of a live recording, a crash
// after it); that block is written again, whole, once it fills. The first
// refusal (EINVAL: a filesystem without direct I/O, an alignment it does not
// take) turns direct I/O off for good; the bytes go out all the same.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string_view>
#include <thread>

namespace acc::format {

class DirectFile {
 public:
  // `fd` (opened for writing) holds exactly `written`, its first bytes (the
  // file header). `direct` false: plain writes, staged the same way.
  DirectFile(int fd, std::string_view written, bool direct = true);
  ~DirectFile();  // writes what is handed to its thread; what was appended since is lost
  DirectFile(const DirectFile&) = delete;
  DirectFile& operator=(const DirectFile&) = delete;

  // 0 or the errno of the first write that failed, here or on the thread.
  int append(const char* data, size_t size);
  int sync();  // every byte appended is in the file
  bool direct() const { return direct_.load(std::memory_order_relaxed); }

  static constexpr size_t kBlock = 4096;
  static constexpr size_t kStage = size_t{4} << 20;
  static constexpr size_t kStages = 4;

 private:
  struct Job {
    size_t stage;
    uint64_t offset;
  };
  int handOff();
  void ioLoop();
  int firstError();
  int keep(int err);
  int pwriteAll(const char* data, size_t size, uint64_t offset);
  bool setDirect(bool on);

  int fd_;
  std::atomic<bool> direct_{false};
  char* stages_ = nullptr;  // kStages x kStage bytes, page-aligned (mmap)
  size_t current_ = 0;      // the stage being filled
  size_t used_ = 0;         // bytes in it
  uint64_t offset_ = 0;     // the file offset of its first byte, a multiple of kBlock

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> jobs_;  // full stages, oldest first
  bool busy_[kStages] = {};
  bool writing_ = false;  // the thread is writing a job it took
  bool stopping_ = false;
  int error_ = 0;
  std::thread io_;  // started at the first full stage
  bool no_thread_ = false;  // none could be started: the caller writes full stages
};

}  // namespace acc::format
