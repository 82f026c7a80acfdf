#include "analyzer/judge/allowed_precision.h"

#include "analyzer/judge/origins.h"
#include "analyzer/read/numeric_settings.h"

namespace acc::analyzer {

void judgeAtAllowedPrecision(RecordComparison& r, const RecordMeta& m0, const nlohmann::json& manifest0,
                             const RecordMeta& m1, const nlohmann::json& manifest1, const Thresholds& thresholds) {
  if (!isMatmulLike(r.op) && !isConvLike(r.op)) return;
  const AllowedPrecision a0 = allowedPrecision(manifest0, m0.op, m0.off_cpu);
  const AllowedPrecision a1 = allowedPrecision(manifest1, m1.op, m1.off_cpu);
  // The coarser of the two: either run may have rounded.
  const AllowedPrecision& a = !a1.reduced() || (a0.reduced() && a0.mantissa_bits < a1.mantissa_bits) ? a0 : a1;
  if (!a.reduced()) return;
  const Precision cap = a.mantissa_bits <= 7 ? Precision::BFloat16 : Precision::Float16;
  const std::string label = a.name + ", allowed by " + (&a == &a0 ? "DIR0's " : "DIR1's ") + a.setting;
  for (TensorPair& p : r.tensors) {
    if (!consumes(r, p)) p.allowed_precision = static_cast<uint8_t>(cap);
    if (consumes(r, p) || p.verdict == Verdict::Pass || !p.metrics.compared || p.uninitialized) continue;
    judge(p, thresholds, cap, label);
    if (p.verdict == Verdict::Pass) p.reason = "passes at " + label;
  }
}

}  // namespace acc::analyzer
