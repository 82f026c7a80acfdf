#include "analyzer/read/numeric_settings.h"

#include "analyzer/read/json_fields.h"

#include <algorithm>
#include <set>

namespace acc::analyzer {
namespace {

// "aten::addmm" -> "addmm"; an in-place or out variant keeps its own name.
std::string bare(const std::string& op) {
  const size_t colons = op.rfind("::");
  return colons == std::string::npos ? op : op.substr(colons + 2);
}

}  // namespace

void addSettingDifference(std::vector<SettingDifference>& to, SettingDifference d) {
  auto same = [&](const SettingDifference& e) { return e.setting == d.setting; };
  if (std::none_of(to.begin(), to.end(), same)) to.push_back(std::move(d));
}

nlohmann::json settingDifferenceJson(const SettingDifference& d) {
  return {{"setting", d.setting}, {"dir0", d.dir0}, {"dir1", d.dir1}};
}

std::vector<SettingDifference> settingDifferences(const nlohmann::json& manifest0, const nlohmann::json& manifest1) {
  const nlohmann::json &a = objectField(manifest0, "numerics"), &b = objectField(manifest1, "numerics");
  std::vector<SettingDifference> out;
  if (a.empty() || b.empty()) return out;  // a recording from before format 3 says nothing
  std::set<std::string> keys;
  for (const auto& [k, v] : a.items()) keys.insert(k);
  for (const auto& [k, v] : b.items()) keys.insert(k);
  for (const std::string& k : keys) {
    const nlohmann::json v0 = a.contains(k) ? a[k] : nlohmann::json(), v1 = b.contains(k) ? b[k] : nlohmann::json();
    if (v0 != v1) out.push_back({k, v0, v1});
  }
  return out;
}

bool isMatmulLike(const std::string& op) {
  static const std::set<std::string> names = {
      "mm", "bmm", "addmm", "addmm_", "addbmm", "addbmm_", "baddbmm", "baddbmm_", "matmul", "linear", "bilinear",
      "einsum", "tensordot", "_addmm_activation", "chain_matmul", "linalg_multi_dot", "scaled_dot_product_attention",
      "_scaled_dot_product_attention_math", "_native_multi_head_attention"};
  return names.count(bare(op)) != 0;
}

bool isConvLike(const std::string& op) {
  const std::string b = bare(op);
  for (const char* prefix : {"conv", "_convolution", "_conv_depthwise", "cudnn_convolution", "miopen_convolution"}) {
    if (b.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

AllowedPrecision allowedPrecision(const nlohmann::json& manifest, const std::string& op, bool off_cpu) {
  AllowedPrecision p;
  if (!off_cpu) return p;
  const nlohmann::json& n = objectField(manifest, "numerics");
  if (isMatmulLike(op)) {
    // float32_matmul_precision "medium" lets matmuls compute with bfloat16
    // products, "high" (what allow_tf32 sets) with TF32.
    const std::string precision = textField(n, "torch.get_float32_matmul_precision");
    if (precision == "medium") {
      p = {7, "bf16", "torch.get_float32_matmul_precision"};
    } else if (precision == "high") {
      p = {10, "tf32", "torch.get_float32_matmul_precision"};
    } else if (flagField(n, "torch.backends.cuda.matmul.allow_tf32")) {
      p = {10, "tf32", "torch.backends.cuda.matmul.allow_tf32"};
    } else if (textField(n, "torch.backends.cuda.matmul.fp32_precision") == "tf32") {
      p = {10, "tf32", "torch.backends.cuda.matmul.fp32_precision"};
    }
  } else if (isConvLike(op)) {
    if (flagField(n, "torch.backends.cudnn.allow_tf32")) {
      p = {10, "tf32", "torch.backends.cudnn.allow_tf32"};
    } else if (textField(n, "torch.backends.cudnn.conv.fp32_precision") == "tf32") {
      p = {10, "tf32", "torch.backends.cudnn.conv.fp32_precision"};
    }
  }
  return p;
}

bool offCpu(const format::Tensor& t) { return !t.device.empty() && t.device.rfind("cpu", 0) != 0; }

bool offCpu(const format::OpRecord& r) {
  return std::any_of(r.tensors.begin(), r.tensors.end(), [](const format::Tensor& t) { return offCpu(t); });
}

std::string settingText(const nlohmann::json& value) { return value.is_null() ? "(not recorded)" : value.dump(); }

}  // namespace acc::analyzer
