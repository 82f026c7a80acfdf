// The run's numeric settings for the manifest ("numerics", docs/FORMAT.md):
// what a run's numbers depend on besides its kernels (TF32, matmul
// precision, reduced-precision reductions, deterministic algorithms, the
// default dtype, autocast). Porting guides name them as the first thing to
// check, and the analyzer judges matmul- and conv-like ops at the precision
// they allow.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>

namespace acc::recorder {

class NumericSettings {
 public:
  // Reads torch's global settings. Called at the first recorded op and at
  // the end of every optimizer step (not at exit: torch's globals may be
  // gone by then); a value that differs from the first one read is listed
  // under "changed".
  void sample();
  // On an op thread, for each recorded op: the first call samples the
  // global settings; autocast is thread-local, so its state is noted here.
  // Costs one thread-local read while autocast is off. Returns the
  // thread's autocast state for the op's record ("cpu:bfloat16", devices
  // comma-separated), empty while autocast is off.
  std::string onRecordedOp();
  // {} until the first sample.
  nlohmann::json toJson() const;

 private:
  std::string noteAutocast();

  std::atomic<bool> sampled_{false};
  mutable std::mutex mutex_;
  nlohmann::json values_ = nlohmann::json::object();
  std::set<std::string> changed_;
  std::set<std::string> autocast_;  // "device:dtype" seen on recorded ops
};

}  // namespace acc::recorder
