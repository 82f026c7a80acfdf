// Which libtorch this process has loaded, found without linking torch: the
// shim must not pull torch into the processes it is preloaded into.
#pragma once

#include <optional>
#include <string>

namespace acc::preload {

struct TorchIdentity {
  std::string library;   // path of the loaded libtorch_cpu
  std::string build_id;  // GNU build id, hex; empty if the library has none
  std::string version;   // best effort: version.py beside it, else the soname suffix
};

// The libtorch_cpu mapped into this process, if any.
std::optional<TorchIdentity> loadedTorch();

// What the recorder core was built against: `key=value` lines written by
// the build next to the core (libacc_core.torch).
std::optional<TorchIdentity> readBuiltFor(const std::string& path);

bool sameTorch(const TorchIdentity& running, const TorchIdentity& built);

}  // namespace acc::preload
