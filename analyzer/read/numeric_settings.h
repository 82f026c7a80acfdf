// A recording's numeric settings (manifest "numerics", docs/FORMAT.md): where
// two runs' settings differ, and the reduced float32 precision (TF32, or
// bfloat16 at float32_matmul_precision "medium") they allow matmul- and
// conv-like ops on a device (docs/METRICS.md, "Precision settings").
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "format/record.h"

namespace acc::analyzer {

struct SettingDifference {
  std::string setting;         // e.g. torch.backends.cuda.matmul.allow_tf32
  nlohmann::json dir0, dir1;   // null where a run did not record it
};

// Settings whose values differ between two manifests' "numerics" (the list
// of settings that changed during a run is compared too).
std::vector<SettingDifference> settingDifferences(const nlohmann::json& manifest0, const nlohmann::json& manifest1);
// Adds `d` to `to` unless a difference of the same setting is listed
// already (several rank pairs, or several saved comparisons, report it).
void addSettingDifference(std::vector<SettingDifference>& to, SettingDifference d);
// {"setting", "dir0", "dir1"}, as summary.json and a saved comparison hold it.
nlohmann::json settingDifferenceJson(const SettingDifference& d);

// Ops whose float32 kernels may use TF32 tensor cores when the settings
// allow it: cuBLAS matmuls (and ops made of them), cuDNN convolutions.
bool isMatmulLike(const std::string& op);
bool isConvLike(const std::string& op);

// The precision an op may compute float32 products at.
struct AllowedPrecision {
  int mantissa_bits = 0;  // explicit mantissa bits: 10 (TF32), 7 (bfloat16); 0: full float32
  std::string name;       // "tf32", "bf16"; "" for full float32
  std::string setting;    // the setting that allows it, as the manifest names it
  bool reduced() const { return mantissa_bits != 0; }
};

// For forward op `op` (a backward record: its forward op) recorded with
// tensors on a device other than the CPU (TF32 is a device feature) under
// the settings of `manifest`.
AllowedPrecision allowedPrecision(const nlohmann::json& manifest, const std::string& op, bool off_cpu);

// True when the tensor is on a device other than the CPU (one of the
// record's tensors, for a record).
bool offCpu(const format::Tensor& t);
bool offCpu(const format::OpRecord& r);

// A setting's value as the reports show it: its JSON, or "(not recorded)".
std::string settingText(const nlohmann::json& value);

}  // namespace acc::analyzer
