// ACC_REFERENCE's end-of-run lines: nothing found, or the first find and
// what replay says of its kernel. Replay is `acc-analyzer check` (the kernel
// rule, on the inputs the find captured), run by this process once its
// recording is complete: the training program has ended, and the check
// takes a few seconds, for one op and its context.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace acc::recorder {

// `reference`: the manifest's "reference"; `dir`: this rank's recording;
// `reference_dir`: ACC_REFERENCE. `replay` false (a signal ended the
// program): the lines say which command replays the find instead.
std::vector<std::string> referenceVerdict(const nlohmann::json& reference, const std::string& dir,
                                          const std::string& reference_dir, bool replay);

// acc-analyzer beside this library (the build tree's bin/, an install
// prefix's bin/), or "" when there is none.
std::string analyzerBeside();

}  // namespace acc::recorder
