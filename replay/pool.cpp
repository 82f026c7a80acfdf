#include "replay/pool.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

extern char** environ;

namespace acc::replay {
namespace {

// One acc-replay process and the two pipes to it.
class Worker {
 public:
  Worker(const std::string& binary, int stderr_fd) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    if (stderr_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
    // The analyzer's environment without LD_PRELOAD: a worker is not a
    // program to record.
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env.emplace_back(*e);
    }
    env.emplace_back("OMP_NUM_THREADS=1");
    std::vector<char*> envp;
    for (std::string& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string arg0 = binary, arg1 = "--worker";
    char* argv[] = {arg0.data(), arg1.data(), nullptr};
    const int rc = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
    if (rc != 0) {
      ::close(to_);
      ::close(from_);
      throw std::runtime_error(binary + ": cannot start (" + std::strerror(rc) + ")");
    }
  }
  ~Worker() {
    if (to_ >= 0) ::close(to_);  // the worker sees the end of its input and exits
    ::close(from_);
    int status = 0;
    if (pid_ > 0) waitpid(pid_, &status, 0);
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Throws when the worker died (it is then unusable).
  Outcome call(const std::string& request) {
    writeMessage(to_, request);
    std::string reply;
    if (!readMessage(from_, reply)) throw std::runtime_error("the replay worker exited");
    return decodeOutcome(reply);
  }

  std::string exitReason() {
    ::close(to_);
    to_ = -1;
    int status = 0;
    if (waitpid(pid_, &status, 0) == pid_) {
      pid_ = -1;
      if (WIFSIGNALED(status)) return std::string("the replay worker crashed (") + strsignal(WTERMSIG(status)) + ")";
      if (WIFEXITED(status)) return "the replay worker exited with status " + std::to_string(WEXITSTATUS(status));
    }
    return "the replay worker stopped answering";
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
};

}  // namespace

std::string defaultWorkerPath() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const std::filesystem::path worker = self.parent_path() / "acc-replay";
  return std::filesystem::exists(worker, ec) ? worker.string() : "";
}

Pool::Pool(std::string binary, unsigned workers) : binary_(std::move(binary)), workers_(workers ? workers : 1) {
  if (binary_.empty()) {
    unavailable_ = "the replay stage (acc-replay, next to acc-analyzer) is not installed";
  } else if (access(binary_.c_str(), X_OK) != 0) {
    unavailable_ = "the replay stage " + binary_ + " cannot be run (" + std::strerror(errno) + ")";
  }
  // An unlinked file: gone with the pool, whatever happens. O_APPEND: the
  // workers share its offset and must not write over each other.
  std::FILE* f = std::tmpfile();
  if (f != nullptr) {
    stderr_fd_ = ::fcntl(fileno(f), F_DUPFD_CLOEXEC, 0);
    std::fclose(f);
    if (stderr_fd_ >= 0) ::fcntl(stderr_fd_, F_SETFL, ::fcntl(stderr_fd_, F_GETFL) | O_APPEND);
  }
}

Pool::~Pool() {
  if (stderr_fd_ >= 0) ::close(stderr_fd_);
}

Pool::Stderr Pool::workerStderr() const {
  Stderr out;
  if (stderr_fd_ < 0) return out;
  std::string line;
  auto end = [&] {
    if (out.first.size() < kStderrKept) out.first.push_back(line);
    ++out.lines;
    line.clear();
  };
  char buf[1 << 16];
  off_t at = 0;
  for (ssize_t n; (n = ::pread(stderr_fd_, buf, sizeof buf, at)) > 0; at += n) {
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        end();
      } else if (line.size() < kStderrLineChars) {
        line += buf[i];
      }
    }
  }
  if (!line.empty()) end();
  return out;
}

void Pool::run(const Next& next, const Done& done) {
  std::mutex mu;  // guards next(), done() and `exhausted`
  bool exhausted = false;
  auto take = [&]() -> std::optional<std::pair<uint64_t, Request>> {
    std::lock_guard<std::mutex> lock(mu);
    if (exhausted) return std::nullopt;
    auto item = next();
    if (!item) exhausted = true;
    return item;
  };
  auto finish = [&](uint64_t id, Outcome&& o) {
    std::lock_guard<std::mutex> lock(mu);
    done(id, std::move(o));
  };
  if (!unavailable_.empty()) {
    while (auto item = take()) {
      Outcome o;
      o.status = Status::NotReplayable;
      o.reason = unavailable_;
      finish(item->first, std::move(o));
    }
    return;
  }
  // A worker writing a large reply while its request is still being written
  // cannot deadlock: it reads the whole request before it answers.
  signal(SIGPIPE, SIG_IGN);
  auto serve = [&] {
    std::unique_ptr<Worker> worker;
    while (auto item = take()) {
      const std::string bytes = encodeRequest(item->second);
      item->second = Request();  // its data are in `bytes` now
      Outcome o;
      try {
        if (!worker) worker = std::make_unique<Worker>(binary_, stderr_fd_);
        o = worker->call(bytes);
      } catch (const std::exception& e) {
        o = Outcome();
        o.status = Status::Failed;
        o.reason = worker ? worker->exitReason() : e.what();
        worker.reset();  // a fresh one for the next op
      }
      finish(item->first, std::move(o));
    }
  };
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < workers_; ++i) threads.emplace_back(serve);
  for (std::thread& t : threads) t.join();
}

}  // namespace acc::replay
