#include "recorder/session/session.h"

#include <cstdint>
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <csignal>
#include <thread>

#include "format/record.h"
#include "recorder/session/manifest.h"
#include "recorder/per_thread.h"
#include "recorder/observe/observer.h"
#include "recorder/python/python_api.h"
#include "recorder/reference/reference_verdict.h"
#include "recorder/torch_compat.h"
#include "recorder/write/data_buffer.h"

namespace acc::recorder {
namespace {

// How long stop() waits for collectives whose work has not completed.
constexpr int kCollectiveWaitMs = 2000;

std::atomic<Session*> g_active{nullptr};
// Owned by the process; never freed (see header). Atomic: stop() may run on
// the exit path and on the signal path at once, and only one of them stops.
std::atomic<Session*> g_session{nullptr};
std::string g_torch_version;

// mkdir -p; returns the errno of the first failure, 0 on success.
int makeDirs(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return errno;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno;
  return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

// Takes the rank directory for this process. A second process recording
// the same rank into the same place (a subprocess that imports torch) gets
// its own directory instead of overwriting the first one's records.
std::string lockDirectory(const std::string& dir) {
  std::string chosen = dir;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (makeDirs(chosen) != 0) return "";
    int fd = ::open((chosen + "/.lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0) return chosen;  // held until exit
    if (fd >= 0) ::close(fd);
    chosen = dir + ".pid" + std::to_string(::getpid());
  }
  return "";
}

void forgetInChild() {
  // A forked child (a data-loader worker) has no writer thread: it does not
  // record, and its exit must not touch the parent's files; its signals go
  // where they went before acc.
  g_active.store(nullptr);
  if (Session* s = g_session.exchange(nullptr)) s->forgetSignalsInChild();
}

const char* signalName(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return "";
  }
}

}  // namespace

Session::Session(const env::Config& config, int64_t rank, std::string dir)
    : config_(config),
      rank_(rank),
      dir_(std::move(dir)),
      pid_(::getpid()),
      start_ns_(unixNowNs()),
      selector_(config),
      // Waiting tensors only acc holds: an eighth of the writer's budget.
      stats_batch_(config.device_batch, (config.buffer_mb << 20) / 8),
      watch_(config.watch == env::Watch::NanInf ? std::make_unique<Watch>(config, stats_batch_) : nullptr) {}

Session* Session::active() { return g_active.load(std::memory_order_acquire); }

Session* Session::start(const env::Config& config, int64_t rank, const std::string& dir) {
  if (Session* running = g_session.load()) return running;
  std::string taken = lockDirectory(dir);
  if (taken.empty()) {
    std::fprintf(stderr, "acc: cannot create the output directory %s (%s); recording is off\n",
                 dir.c_str(), std::strerror(errno));
    return nullptr;
  }
  g_torch_version = compat::runningTorchVersion();
  auto* s = new Session(config, rank, taken);
  if (!config.reference.empty()) {
    std::string error;
    s->reference_ = Reference::open(config, rank, *s, s->stats_batch_, error);
    if (!s->reference_) {
      std::fprintf(stderr, "acc: %s; recording is off\n", error.c_str());
      delete s;
      return nullptr;
    }
  }
  s->stacks_ = std::make_unique<StackRegistry>(
      config.stack, [s](std::string record) { s->emit(std::move(record)); });
  // The writer's first tick comes a second after it starts, long after
  // writer_ is set below.
  try {
    s->writer_ = std::make_unique<Writer>(taken + "/" + kRecordsFile, config,
                                          [s] { s->writeManifest("running"); });
    // ACC_REFERENCE's judge publishes a record's contents as it finishes
    // and writes records in its own order; with ACC_ON_FULL=drop a dropped
    // batch would leave its thread's next records referring to contents
    // defined nowhere (record_batch.h).
    const bool alone = s->reference_ || (config.on_full == env::OnFull::Drop && s->contents() != nullptr);
    s->batches_ = std::make_unique<RecordBatches>(*s->writer_, s->contents(), alone ? 1 : config.record_batch);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "acc: cannot write %s; recording is off\n", e.what());
    delete s;
    return nullptr;
  }
  if (config.random != env::Random::Off) {
    s->random_ = RandomTape::open(config, rank, taken, s->random_error_);
    if (!s->random_) {
      std::fprintf(stderr, "acc: ACC_RANDOM: %s; random draws are not %s\n", s->random_error_.c_str(),
                   config.random == env::Random::Save ? "saved" : "replayed");
    }
  }
  if (!config.overrides.empty()) s->override_ = std::make_unique<OpOverride>(config.overrides);
  // Room for the final manifest if the records fill the disk.
  reserveManifestSpace(taken);
  s->writeManifest("running");
  g_session.store(s);
  g_active.store(s, std::memory_order_release);
  observer::install();
  std::atexit(&Session::stop);
  pthread_atfork(nullptr, nullptr, &forgetInChild);
  s->signals_ = std::make_unique<TerminationSignals>(s->signal_, &s->step_, &Session::stop);
  if (!config.quiet && s->watch_) {
    std::fprintf(stderr,
                 "acc: watching rank %lld for the first NaN/Inf (ACC_WATCH=naninf, passes %s, %s ops); "
                 "it and the %llu ops before it go to %s\n",
                 static_cast<long long>(rank), env::passesName(config.passes), config.nested ? "all" : "top-level",
                 static_cast<unsigned long long>(config.watch_context), taken.c_str());
  } else if (!config.quiet) {
    std::fprintf(stderr, "acc: recording rank %lld to %s (level %d, passes %s, %s ops)\n",
                 static_cast<long long>(rank), taken.c_str(), config.level,
                 env::passesName(config.passes), config.nested ? "all" : "top-level");
  }
  if (!config.quiet && s->reference_) {
    std::fprintf(stderr,
                 "acc: ACC_REFERENCE: judging each record against %s as it is made; the first %llu origin%s of a "
                 "divergence %s written at level 2 with %llu ops before and after\n",
                 s->reference_->file().c_str(), static_cast<unsigned long long>(config.reference_max),
                 config.reference_max == 1 ? "" : "s", config.reference_max == 1 ? "is" : "are",
                 static_cast<unsigned long long>(config.reference_context));
  }
  if (!config.quiet && s->random_) {
    if (config.random == env::Random::Save) {
      std::fprintf(stderr, "acc: saving what random ops draw to %s/%s (ACC_RANDOM=save)\n", taken.c_str(),
                   env::kRandomFile);
    } else {
      std::fprintf(stderr,
                   "acc: replaying the random draws of %s (ACC_RANDOM): this run's numbers change on purpose\n",
                   config.random_source.c_str());
    }
  }
  // Said even when quiet: this run's numbers are not the program's own.
  if (s->override_) {
    std::fprintf(stderr,
                 "acc: ACC_OVERRIDE: %s computed in float64 on the CPU and handed back in the op's dtype and device: "
                 "this run's numbers change on purpose\n",
                 s->override_->describe().c_str());
  }
  // Module paths and gradients come from torch's Python module hooks: a
  // program without Python (a C++ libtorch program) has neither.
  if (!PythonApi::get().available() && (!config.modules.empty() || config.grads)) {
    std::fprintf(stderr, "acc: %s needs a Python program (module hooks); this one has no Python: %s\n",
                 !config.modules.empty() ? "ACC_MODULES" : "ACC_GRADS",
                 !config.modules.empty() ? "no op is recorded" : "no gradient is recorded");
  }
  return s;
}

void Session::stop() {
  Session* s = g_session.load();
  if (s == nullptr || s->pid_ != ::getpid() || !g_session.compare_exchange_strong(s, nullptr)) return;
  // A collective's record is queued when its work completes, on the
  // backend's thread: the last step's may complete after the program's last
  // line (seen on torch 2.14: DDP's last all-reduce, about one run in three,
  // went missing). Waited for briefly while the session is still active;
  // those still running are counted unfinished in the manifest.
  for (int waited_ms = 0; waited_ms < kCollectiveWaitMs && s->counts_.collectives_pending.load() > 0; ++waited_ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  g_active.store(nullptr, std::memory_order_release);
  observer::uninstall();
  s->stats_batch_.flush();
  if (s->watch_) s->watch_->drain(*s);
  if (s->reference_) s->reference_->drain(*s);
  if (s->random_) s->random_->stop();
  s->batches_->handOverAll();
  s->writer_->stop();
  const bool terminated = s->signal_.default_action.load();
  s->writeManifest(terminated ? "terminated" : "complete", /*last=*/true);
  if (terminated && !s->config_.quiet) {
    std::fprintf(stderr, "acc: rank %lld: terminated by %s at step %lld; the queued records were written\n",
                 static_cast<long long>(s->rank_), signalName(s->signal_.number.load()),
                 static_cast<long long>(s->signal_.step.load()));
  }
  const std::string watched = s->watch_ ? s->watch_->summary() : std::string();
  if (!watched.empty() && !s->config_.quiet) std::fprintf(stderr, "%s\n", watched.c_str());
  if (s->random_ && !s->config_.quiet) std::fprintf(stderr, "%s\n", s->random_->summary().c_str());
  if (s->override_) std::fprintf(stderr, "%s\n", s->override_->summary().c_str());
  if (s->reference_) {
    for (const std::string& line : referenceVerdict(s->reference_->toJson(), s->dir_, s->config_.reference, !terminated)) {
      if (!s->config_.quiet || line.rfind("acc: ACC_REFERENCE: no ", 0) != 0) std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
  if (!s->config_.quiet) {
    WriterCounts w = s->writer_->counts();
    std::fprintf(stderr, "acc: rank %lld: %llu records written, %llu dropped, %llu lost to %s%s%s\n",
                 static_cast<long long>(s->rank_), static_cast<unsigned long long>(w.records_written),
                 static_cast<unsigned long long>(w.records_dropped),
                 static_cast<unsigned long long>(w.records_lost), s->dir_.c_str(),
                 s->writer_->ioError().empty() ? "" : ": ", s->writer_->ioError().c_str());
  }
}

void Session::pythonExiting() { stop(); }

void Session::advanceStep() {
  step_.fetch_add(1, std::memory_order_relaxed);
  forward_numbers_.store(0, std::memory_order_relaxed);
  collective_numbers_.store(0, std::memory_order_relaxed);
  unlinked_numbers_.store(0, std::memory_order_relaxed);
  links_.clear();
  numerics_.sample();
  // A step's device statistics in one batch, at most.
  stats_batch_.flush();
  // Every thread's records of the step, before those of the next.
  batches_->handOverAll();
}

bool Session::emit(std::string record) { return writer_->submit(std::move(record)); }
bool Session::emit(std::unique_ptr<QueuedRecord> record) { return writer_->submit(std::move(record)); }
bool Session::emit(std::unique_ptr<InFlightRecord> record) { return writer_->submit(std::move(record)); }

void Session::noteDevice(const std::string& device) {
  std::lock_guard<std::mutex> lock(devices_mutex_);
  devices_.insert(device);
}

void Session::forgetSignalsInChild() {
  if (signals_) signals_->forgetInChild();
}

namespace {

// Level 2's tensor bytes in acc's own memory (write/data_buffer.h): blocks
// of buffers in use, kept for reuse, and the peak of the two together.
nlohmann::json dataBuffersJson() {
  const DataBufferBytes b = dataBufferBytes();
  return {{"in_use_bytes", b.in_use},
          {"kept_bytes", b.cached},
          {"peak_bytes", b.peak},
          {"mapped", b.mapped},
          {"mapped_bytes", b.mapped_bytes}};
}

}  // namespace

void Session::writeManifest(const char* status, bool last) {
  std::lock_guard<std::mutex> lock(manifest_mutex_);
  WriterCounts w = writer_->counts();
  const uint64_t now = unixNowNs();
  nlohmann::json devices = nlohmann::json::array();
  {
    std::lock_guard<std::mutex> dl(devices_mutex_);
    for (const std::string& d : devices_) devices.push_back(d);
  }
  nlohmann::json m = {
      {"format", "acc-recording"},
      {"format_version", format::kFormatVersion},
      {"status", status},
      {"torch_version", g_torch_version},
      {"rank", rank_},
      {"pid", pid_},
      {"start_time", isoTime(start_ns_)},
      {"updated_time", isoTime(now)},
      {"end_time", last ? nlohmann::json(isoTime(now)) : nullptr},
      {"devices", devices},
      {"config", configToJson(config_)},
      {"numerics", numerics_.toJson()},
      {"records_file", kRecordsFile},
      {"counts",
       {{"ops_seen", counts_.ops_seen.load()},
        {"recorded", counts_.recorded.load()},
        {"skipped", counts_.skipped.load()},
        {"written", w.records_written},
        {"dropped", w.records_dropped},
        {"lost_io", w.records_lost},
        {"capture_errors", counts_.capture_errors.load()},
        {"collectives_unfinished", std::max<int64_t>(0, counts_.collectives_pending.load())},
        {"steps", step_.load() + 1},
        {"stacks", stacks_ ? stacks_->distinctStacks() : 0},
        {"stacks_lost", w.others_lost},
        {"unlinked_evicted", links_.evicted()},
        {"frames", w.frames},
        {"bytes", w.bytes_written}}},
      {"contents", contents_.countsJson()},
      {"device_stats", stats_batch_.countsJson()},
      {"data_buffers", dataBuffersJson()},
      {"direct_io", w.direct_io},
      {"io_error", writer_->ioError()},
      {"thread_locals", threadLocalsPlace()},
  };
  if (const int sig = signal_.number.load()) {
    m["signal"] = {{"number", sig},
                   {"name", signalName(sig)},
                   {"step", signal_.step.load()},
                   {"time", isoTime(signal_.unix_ns.load())},
                   {"action", signal_.default_action.load() ? "default" : "program handler"}};
  }
  if (watch_) m["watch"] = watch_->toJson();
  if (reference_) m["reference"] = reference_->toJson();
  if (random_) {
    m["random"] = random_->toJson();
  } else if (config_.random != env::Random::Off) {
    m["random"] = {{"mode", env::randomName(config_.random)}, {"error", random_error_}};
  }
  if (override_) m["override"] = override_->toJson();
  writeManifestFile(dir_, m, last);
}

}  // namespace acc::recorder
