// Recordings of tests/scripts/gelu_mlp.py shared by the compare tests. Each
// variant is recorded once per build and cached under the build tree (keyed
// by the recorder libraries, the wrong-kernel library and the script, and
// guarded by a file lock), so the many test processes CTest starts do not
// record the same run again.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/e2e/harness.h"

namespace acc::test {

enum class Variant {
  Reference,       // float32, level 2, Python stacks
  ReferenceAgain,  // the same run again
  WrongForward,    // aten::gelu's CPU kernel off by ~1e-3 (tests/compare/wrong_kernel)
  WrongBackward,   // aten::gelu_backward's CPU kernel off by ~1e-3
  Float64,         // the same model in float64
  ExtraOp,         // one extra op (x.clone()) before the first forward pass
  ReferenceLevel1, // float32, level 1 (statistics only)
  WrongForwardLevel1,
};

// The recording's directory (holding rank0/); records it when not cached.
std::string recording(Variant v);

// Any script's recording with `env`, cached the same way under `name`
// (names must differ between variants).
std::string cachedRecording(const std::string& name, const std::string& script,
                            std::map<std::string, std::string> env);

// An analyzer command writing its reports to `out`, with its summary.json
// (null when it wrote none).
struct Analysis {
  RunResult run;
  nlohmann::json summary;
};
Analysis analyze(const std::vector<std::string>& args, const std::string& out);

// The losses a training script printed ("step N loss X ..."), and the
// largest difference of two runs' (which must have as many).
std::vector<double> losses(const RunResult& r);
double largestDifference(const std::vector<double>& a, const std::vector<double>& b);

// A run of tests/scripts/benign_train.py at ACC_LEVEL `level` with `env`
// (DEVICE=testdev loads the test accelerator), cached per build.
std::string benignRun(const std::string& name, const std::string& level, std::map<std::string, std::string> env = {});

}  // namespace acc::test
