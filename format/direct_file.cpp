#include "format/direct_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace acc::format {

DirectFile::DirectFile(int fd, std::string_view written, bool direct) : fd_(fd) {
  void* p = ::mmap(nullptr, kStages * kStage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) stages_ = static_cast<char*>(p);
  // The partial block at the end of what is written, staged to go out whole.
  offset_ = written.size() / kBlock * kBlock;
  if (stages_ != nullptr) {
    used_ = written.size() - offset_;
    std::memcpy(stages_, written.data() + offset_, used_);
    direct_ = direct && setDirect(true);
  } else {
    offset_ = written.size();  // no staging: plain writes at the end
  }
}

DirectFile::~DirectFile() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (io_.joinable()) io_.join();
  if (stages_ != nullptr) ::munmap(stages_, kStages * kStage);
}

bool DirectFile::setDirect(bool on) {
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0) return false;
  return ::fcntl(fd_, F_SETFL, on ? (flags | O_DIRECT) : (flags & ~O_DIRECT)) == 0;
}

int DirectFile::pwriteAll(const char* data, size_t size, uint64_t offset) {
  while (size > 0) {
    const ssize_t n = ::pwrite(fd_, data, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL && direct()) {
        // Refused: no more direct I/O on this file; the same write through the cache.
        setDirect(false);
        direct_ = false;
        continue;
      }
      return errno;
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return 0;
}

int DirectFile::firstError() {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

// `err` (0 or an errno) kept as the first error where it is one.
int DirectFile::keep(int err) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_ == 0) error_ = err;
  return error_;
}

int DirectFile::append(const char* data, size_t size) {
  if (stages_ == nullptr) {
    const int err = pwriteAll(data, size, offset_);
    if (err == 0) offset_ += size;
    return err;
  }
  while (size > 0) {
    const size_t n = std::min(kStage - used_, size);
    std::memcpy(stages_ + current_ * kStage + used_, data, n);
    used_ += n;
    data += n;
    size -= n;
    if (used_ == kStage) {
      if (int err = handOff()) return err;
    }
  }
  return firstError();
}

// The full stage to the thread (started here the first time, or the caller
// writes it itself where no thread can be had); the next free one to fill.
int DirectFile::handOff() {
  if (!io_.joinable() && !no_thread_) {
    try {
      io_ = std::thread([this] { ioLoop(); });
    } catch (const std::system_error&) {
      no_thread_ = true;
    }
  }
  if (no_thread_) {
    const int err = pwriteAll(stages_ + current_ * kStage, kStage, offset_);
    offset_ += kStage;
    used_ = 0;
    return keep(err);
  }
  std::unique_lock<std::mutex> lock(mutex_);
  busy_[current_] = true;
  jobs_.push_back({current_, offset_});
  offset_ += kStage;
  used_ = 0;
  changed_.notify_all();
  changed_.wait(lock, [&] { return std::find(std::begin(busy_), std::end(busy_), false) != std::end(busy_); });
  current_ = static_cast<size_t>(std::find(std::begin(busy_), std::end(busy_), false) - std::begin(busy_));
  return error_;
}

void DirectFile::ioLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, every job written
    const Job job = jobs_.front();
    jobs_.pop_front();
    writing_ = true;
    const bool failed = error_ != 0;
    lock.unlock();
    const int err = failed ? 0 : pwriteAll(stages_ + job.stage * kStage, kStage, job.offset);
    lock.lock();
    if (err != 0 && error_ == 0) error_ = err;
    busy_[job.stage] = false;
    writing_ = false;
    changed_.notify_all();
  }
}

int DirectFile::sync() {
  if (stages_ == nullptr) return 0;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return jobs_.empty() && !writing_; });
    if (error_ != 0) return error_;
  }
  // The thread is idle: this one writes the rest, then keeps its last
  // partial block at the start of the stage.
  char* stage = stages_ + current_ * kStage;
  const size_t whole = used_ / kBlock * kBlock;
  if (whole != 0) {
    if (int err = pwriteAll(stage, whole, offset_)) return keep(err);
    std::memmove(stage, stage + whole, used_ - whole);
    used_ -= whole;
    offset_ += whole;
  }
  if (used_ == 0) return 0;
  if (!direct()) return keep(pwriteAll(stage, used_, offset_));
  setDirect(false);
  const int err = pwriteAll(stage, used_, offset_);
  if (!setDirect(true)) direct_ = false;
  return keep(err);
}

}  // namespace acc::format
