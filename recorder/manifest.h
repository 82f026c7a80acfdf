// manifest.json: one per rank directory, rewritten atomically (temp file and
// rename) at start, about once a second, and at exit; see docs/FORMAT.md.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "env/config.h"

namespace acc::recorder {

constexpr const char* kManifestFile = "manifest.json";
constexpr const char* kRecordsFile = "records.acc";

nlohmann::json configToJson(const env::Config& config);

// Returns false (and leaves any previous manifest intact) on I/O errors.
bool writeManifestFile(const std::string& dir, const nlohmann::json& manifest);

std::string isoTime(uint64_t unix_ns);
uint64_t unixNowNs();

}  // namespace acc::recorder
