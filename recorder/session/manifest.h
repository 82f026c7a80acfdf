// manifest.json: one per rank directory, rewritten atomically (temp file and
// rename) at start, about once a second, and at exit; see docs/FORMAT.md.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "env/config.h"

namespace acc::recorder {

constexpr const char* kManifestFile = "manifest.json";
using env::kRecordsFile;

nlohmann::json configToJson(const env::Config& config);

// A file of kManifestReserveBytes beside the manifest, made at start: when
// the records fill the disk, removing it makes room for the final manifest.
constexpr const char* kManifestReserveFile = ".manifest.reserve";
constexpr long kManifestReserveBytes = 256 << 10;
void reserveManifestSpace(const std::string& dir);

// Returns false (and leaves any previous manifest intact) on I/O errors.
// `last` gives the reserved space back first.
bool writeManifestFile(const std::string& dir, const nlohmann::json& manifest, bool last = false);

std::string isoTime(uint64_t unix_ns);
uint64_t unixNowNs();

}  // namespace acc::recorder
