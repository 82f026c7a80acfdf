#include "analyzer/report/record_json.h"

#include <cstdint>
#include <cmath>

namespace acc::analyzer {
nlohmann::json jsonNumber(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

nlohmann::json statsJson(const format::Stats& s) {
  char checksum[20];
  std::snprintf(checksum, sizeof checksum, "%016llx", static_cast<unsigned long long>(s.checksum));
  return {{"min", jsonNumber(s.min)},   {"max", jsonNumber(s.max)},         {"mean", jsonNumber(s.mean)},
          {"norm", jsonNumber(s.norm)}, {"nan_count", s.nan_count},     {"inf_count", s.inf_count},
          {"checksum", checksum}};
}

nlohmann::json tensorJson(const format::Tensor& t) {
  nlohmann::json j = {{"role", format::roleName(t.role)},
                      {"position", t.position},
                      {"item", t.item},
                      {"dtype", format::dtypeName(t.dtype)},
                      {"shape", t.shape},
                      {"strides", t.strides},
                      {"device", t.device}};
  if (t.has_stats) j["stats"] = statsJson(t.stats);
  j["has_data"] = t.has_data;
  if (t.uninitialized) j["uninitialized"] = true;
  if (t.content != 0) j["content"] = t.content;  // same id: same values (format v4)
  return j;
}

nlohmann::json recordJson(const format::OpRecord& r, int64_t rank) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const format::Tensor& t : r.tensors) tensors.push_back(tensorJson(t));
  nlohmann::json scalars = nlohmann::json::array();
  for (const format::Scalar& s : r.scalars) scalars.push_back({{"position", s.position}, {"value", s.value}});
  nlohmann::json j = {{"name", r.name},
                      {"op", r.op},
                      {"index", r.index},
                      {"pass", format::passName(r.pass)},
                      {"op_number", r.op_number},
                      {"step", r.step},
                      {"rank", rank},
                      {"thread", r.thread},
                      {"depth", r.depth},
                      {"stack_id", r.stack_id},
                      {"sequence_nr", r.sequence_nr},
                      // The module path; null where none is known (C++
                      // programs, recordings before format 5).
                      {"module", r.has_module ? nlohmann::json(r.module) : nlohmann::json()},
                      // Format 6: "device:dtype" of the autocast the op ran under; null when off.
                      {"autocast", r.has_autocast ? nlohmann::json(r.autocast) : nlohmann::json()},
                      {"start_ns", r.start_ns},
                      {"end_ns", r.end_ns},
                      {"scalars", scalars},
                      {"tensors", tensors}};
  if (r.pass == format::Pass::Backward) {
    j["grad_fn"] = r.grad_fn;
    j["forward_name"] = r.forward_name;
  }
  return j;
}

nlohmann::json stackJson(const format::StackRecord& s) {
  nlohmann::json frames = nlohmann::json::array();
  for (const format::StackFrame& f : s.frames) {
    frames.push_back({{"kind", f.kind == format::FrameKind::Python ? "python" : "native"}, {"frame", f.text}});
  }
  return {{"stack_id", s.id}, {"frames", frames}};
}

}  // namespace acc::analyzer
