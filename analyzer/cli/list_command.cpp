// acc-analyzer list DIR: the records of a recording in execution order.
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "analyzer/cli/command_line.h"
#include "analyzer/cli/commands.h"
#include "analyzer/common/text.h"
#include "analyzer/report/record_json.h"
#include "analyzer/read/json_fields.h"
#include "analyzer/read/recording.h"
#include "analyzer/read/recording_notes.h"

namespace acc::analyzer {
namespace {

constexpr const char* kListUsage =
    "usage: acc-analyzer list DIR [--json] [--stacks]\n"
    "\n"
    "Prints the records of the recording in DIR (a directory of rank*/ folders,\n"
    "or one rank folder) in execution order, rank by rank, with the nn.Module\n"
    "each op ran in (\"in enc.layers.0.norm1\"; Python programs only).\n"
    "\n"
    "  --json     one JSON object per record and line (see docs/FORMAT.md)\n"
    "  --stacks   include each record's call stack\n"
    "\n"
    "Exit codes: 0 listed; 2 usage error, unreadable or damaged recording (the\n"
    "readable records are still listed).\n";

std::string num6(double v) { return numberText(v, "%.6g"); }

// The NaN/Inf watch's outcome (manifest "watch", ACC_WATCH=naninf).
std::string watchText(const nlohmann::json& w) {
  auto list = [&](const char* key) {
    std::string out;
    const auto it = w.find(key);
    if (it != w.end() && it->is_array()) {
      for (const nlohmann::json& p : *it) out += (out.empty() ? "" : ", ") + p.dump();
    }
    return out;
  };
  const std::string status = textField(w, "status");
  const std::string watched = std::to_string(countField(w, "ops_watched")) + " ops watched";
  const std::string where = textField(w, "record", "?") + " (step " + std::to_string(intField(w, "step")) + ")";
  if (status == "found") {
    const std::string intended = list("intended_inputs");
    return "watch: " + where + " made the first NaN/Inf, in output " + list("nonfinite_outputs") + ", from " +
           (intended.empty() ? "finite inputs"
                             : "inputs finite but for the program's own infinities in input " + intended) +
           "; " + watched;
  }
  if (status == "handed_in") {
    return "watch: the first NaN/Inf was handed to " + where + " in input " + list("nonfinite_inputs") +
           ", made by no op the watch saw; " + watched;
  }
  const uint64_t intended_ops = countField(w, "intended_ops");
  return "watch: no NaN/Inf in " + watched +
         (intended_ops == 0 ? std::string()
                            : " but for the program's own infinities (masks) in " + std::to_string(intended_ops));
}

void printHuman(const format::OpRecord& r, const std::map<uint64_t, format::StackRecord>& stacks,
                bool with_stacks) {
  std::printf("%6llu  step %-3lld %s", static_cast<unsigned long long>(r.index),
              static_cast<long long>(r.step), r.name.c_str());
  if (r.pass == format::Pass::Backward) std::printf("  (%s)", r.grad_fn.c_str());
  if (!r.module.empty()) std::printf("  in %s", r.module.c_str());
  std::printf("\n");
  for (const format::Scalar& s : r.scalars) {
    std::printf("          arg[%u] = %s\n", s.position, s.value.c_str());
  }
  for (const format::Tensor& t : r.tensors) {
    std::string where = std::string(format::roleName(t.role)) + "[" + std::to_string(t.position) +
                        (t.item ? "." + std::to_string(t.item) : "") + "]";
    std::printf("          %-12s %-8s %-18s %s", where.c_str(), format::dtypeName(t.dtype),
                shapeText(t.shape).c_str(), t.device.c_str());
    if (t.uninitialized) std::printf("  uninitialized memory");
    if (t.has_stats) {
      const format::Stats& s = t.stats;
      std::printf("  min %s max %s mean %s norm %s", num6(s.min).c_str(), num6(s.max).c_str(),
                  num6(s.mean).c_str(), num6(s.norm).c_str());
      if (s.nan_count || s.inf_count) {
        std::printf(" nan %llu inf %llu", static_cast<unsigned long long>(s.nan_count),
                    static_cast<unsigned long long>(s.inf_count));
      }
    }
    std::printf("\n");
  }
  if (with_stacks && r.stack_id != 0) {
    auto it = stacks.find(r.stack_id);
    if (it != stacks.end()) {
      for (const format::StackFrame& f : it->second.frames) std::printf("            at %s\n", f.text.c_str());
    }
  }
}

}  // namespace

int listCommand(const std::vector<std::string>& args) {
  std::string dir;
  bool json = false, with_stacks = false;
  CommandLine cli("list", kListUsage);
  cli.app().add_flag("--json", json);
  cli.app().add_flag("--stacks", with_stacks);
  cli.app().add_option("DIR", dir)->required();
  if (std::optional<int> done = cli.parse(args)) return *done;
  int exit_code = kExitOk;
  try {
    for (const RankRecording& rank : openRecording(dir)) {
      std::map<uint64_t, format::StackRecord> stacks;
      ReadDamage damage;
      std::vector<format::OpRecord> records = loadSorted(rank, stacks, damage);
      if (!json) {
        std::string status = textField(rank.manifest, "status", "no manifest");
        uint64_t data = 0;
        for (const format::OpRecord& r : records) data += r.dataSize();
        const std::string data_text = data ? "  " + bytesText(static_cast<double>(data)) + " of tensor data" : "";
        std::printf("rank %lld  %s  torch %s  level %s  format %s  %zu records%s  (%s)\n",
                    static_cast<long long>(rank.rank), rank.dir.c_str(),
                    textField(rank.manifest, "torch_version", "?").c_str(),
                    fieldText(objectField(rank.manifest, "config"), "level").c_str(),
                    fieldText(rank.manifest, "format_version").c_str(), records.size(),
                    data_text.c_str(), status.c_str());
        for (const std::string& note : recordingNotes(rank.manifest)) std::printf("  note: %s\n", note.c_str());
        if (const nlohmann::json& watch = objectField(rank.manifest, "watch"); !watch.empty()) {
          std::printf("  %s\n", watchText(watch).c_str());
        }
      }
      for (const format::OpRecord& r : records) {
        if (json) {
          nlohmann::json j = recordJson(r, rank.rank);
          if (with_stacks && r.stack_id != 0 && stacks.count(r.stack_id)) {
            j["stack"] = stackJson(stacks.at(r.stack_id))["frames"];
          }
          std::cout << j.dump() << "\n";
        } else {
          printHuman(r, stacks, with_stacks);
        }
      }
      if (damage.any()) {
        std::cerr << "acc-analyzer: " << damage.describe(rank.dir + "/records.acc") << "\n";
        exit_code = kExitInput;
      }
    }
  } catch (const InputError& e) {
    std::cerr << "acc-analyzer: " << e.what() << "\n";
    return kExitInput;
  }
  std::cout.flush();
  return exit_code;
}

}  // namespace acc::analyzer
