#include "recorder/session/manifest.h"

#include <cstdint>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <unistd.h>

namespace acc::recorder {

nlohmann::json configToJson(const env::Config& c) {
  nlohmann::json steps = nlohmann::json::array();
  for (const env::StepRange& r : c.steps.ranges) {
    steps.push_back({r.first, r.last == INT64_MAX ? nlohmann::json(nullptr) : nlohmann::json(r.last), r.stride});
  }
  return {
      {"enabled", c.enabled},
      {"eager", c.eager},
      {"grads", c.grads},
      {"watch", env::watchName(c.watch)},
      {"watch_context", c.watch_context},
      {"watch_abort", c.watch_abort},
      {"random", env::randomName(c.random)},
      {"random_source", c.random_source},
      {"output_dir", c.output_dir},
      {"level", c.level},
      {"inputs", c.inputs},
      {"outputs", c.outputs},
      {"passes", env::passesName(c.passes)},
      {"op_range", {c.range_start, c.range_end}},
      {"op_list", c.op_list},
      {"modules", c.modules},
      {"skip", c.skip},
      {"steps", steps},
      {"ranks", c.ranks},
      {"stack", env::stackModeName(c.stack)},
      {"nested", c.nested},
      {"dedup", c.dedup},
      {"buffer_mb", c.buffer_mb},
      {"device_batch", c.device_batch},
      {"record_batch", c.record_batch},
      {"zstd_level", c.zstd_level},
      {"data_zstd_level", c.data_zstd_level},
      {"frame_kb", c.frame_kb},
      {"data_threads", c.data_threads},
      {"on_full", c.on_full == env::OnFull::Wait ? "wait" : "drop"},
  };
}

void reserveManifestSpace(const std::string& dir) {
  const std::string path = dir + "/" + kManifestReserveFile;
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return;
  // Blocks really allocated (a sparse file would free nothing).
  const bool ok = ::posix_fallocate(fd, 0, kManifestReserveBytes) == 0;
  ::close(fd);
  if (!ok) ::unlink(path.c_str());  // a disk already too full: nothing to reserve
}

bool writeManifestFile(const std::string& dir, const nlohmann::json& manifest, bool last) {
  // Periodic writes on a full disk fail and keep the previous manifest; the
  // reserve is for the last one only.
  if (last) ::unlink((dir + "/" + kManifestReserveFile).c_str());
  const std::string path = dir + "/" + kManifestFile;
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  const std::string text = manifest.dump(2) + "\n";
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

uint64_t unixNowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

std::string isoTime(uint64_t unix_ns) {
  std::time_t seconds = static_cast<std::time_t>(unix_ns / 1000000000ull);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03uZ", buf, static_cast<unsigned>((unix_ns / 1000000) % 1000));
  return out;
}

}  // namespace acc::recorder
