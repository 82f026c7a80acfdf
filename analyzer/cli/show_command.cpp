// acc-analyzer show DIR NAME: one record with its tensors, statistics and stack.
#include <cstdint>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <set>

#include "analyzer/cli/command_line.h"
#include "analyzer/cli/commands.h"
#include "analyzer/common/text.h"
#include "analyzer/report/record_json.h"
#include "analyzer/read/record_search.h"
#include "analyzer/read/recording.h"

namespace acc::analyzer {
namespace {

constexpr const char* kShowUsage =
    "usage: acc-analyzer show DIR NAME [--rank R] [--step S] [--json]\n"
    "\n"
    "Prints one record of the recording in DIR: op, pass, step, scalar arguments,\n"
    "every tensor (role, dtype, shape, strides, device, statistics) and the call\n"
    "stack (recorded with ACC_STACK=python, native or both).\n"
    "\n"
    "NAME is a record name as `list` prints it, e.g. aten::linear.2.fwd. Op numbers\n"
    "restart in every training step, so a name usually occurs once per step: the\n"
    "first in execution order is shown unless --step picks one.\n"
    "\n"
    "  --rank R   read rank R (default: the first rank holding NAME)\n"
    "  --step S   the record of training step S\n"
    "  --json     one JSON object: the fields of `list --json` and \"stack\"\n"
    "\n"
    "Exit codes: 0 shown; 2 usage error, NAME not found, unreadable or damaged\n"
    "recording (a record that could be read is still shown).\n";

std::string num9(double v) { return numberText(v, "%.9g"); }

void printRecord(const format::OpRecord& r, int64_t rank, const format::StackRecord* stack) {
  std::printf("%s  rank %lld  step %lld  record %llu  (%s)\n", r.name.c_str(), static_cast<long long>(rank),
              static_cast<long long>(r.step), static_cast<unsigned long long>(r.index),
              r.pass == format::Pass::Forward ? "forward" : "backward");
  std::printf("  op        %s\n", r.op.c_str());
  if (r.has_module) std::printf("  module    %s\n", moduleLabel(r.module).c_str());
  if (r.has_autocast) std::printf("  autocast  %s\n", r.autocast.c_str());
  if (r.pass == format::Pass::Backward) {
    std::printf("  grad_fn   %s\n", r.grad_fn.c_str());
    std::printf("  forward   %s\n", r.forward_name.empty() ? "(unknown)" : r.forward_name.c_str());
  }
  std::printf("  thread %llu  depth %u  sequence_nr %lld  duration %.3f ms\n",
              static_cast<unsigned long long>(r.thread), r.depth, static_cast<long long>(r.sequence_nr),
              r.end_ns >= r.start_ns ? static_cast<double>(r.end_ns - r.start_ns) / 1e6 : 0.0);
  if (!r.scalars.empty()) {
    std::printf("  scalars\n");
    for (const format::Scalar& s : r.scalars) std::printf("    arg[%u] = %s\n", s.position, s.value.c_str());
  }
  std::printf("  tensors\n");
  if (r.tensors.empty()) std::printf("    (none)\n");
  for (const format::Tensor& t : r.tensors) {
    std::string where = std::string(format::roleName(t.role)) + "[" + std::to_string(t.position) +
                        (t.item ? "." + std::to_string(t.item) : "") + "]";
    std::printf("    %-13s %-9s %-16s strides %-14s %s%s\n", where.c_str(), format::dtypeName(t.dtype),
                shapeText(t.shape).c_str(), shapeText(t.strides).c_str(), t.device.c_str(),
                t.uninitialized ? "  (uninitialized memory: values not recorded)"
                : t.has_data    ? "  (data recorded)"
                                : "");
    if (t.has_stats) {
      const format::Stats& s = t.stats;
      std::printf("                  min %s  max %s  mean %s  norm %s  nan %llu  inf %llu  checksum %016llx\n",
                  num9(s.min).c_str(), num9(s.max).c_str(), num9(s.mean).c_str(), num9(s.norm).c_str(),
                  static_cast<unsigned long long>(s.nan_count), static_cast<unsigned long long>(s.inf_count),
                  static_cast<unsigned long long>(s.checksum));
    }
  }
  if (stack == nullptr) {
    std::printf("  stack     (not recorded; record with ACC_STACK=python, native or both)\n");
  } else {
    std::printf("  stack (innermost first)\n");
    for (const format::StackFrame& f : stack->frames) {
      std::printf("    %s %s\n", f.kind == format::FrameKind::Python ? "py " : "nat", f.text.c_str());
    }
  }
}

}  // namespace

int showCommand(const std::vector<std::string>& args) {
  std::string dir, name;
  std::optional<int64_t> rank, step;
  bool json = false;
  CommandLine cli("show", kShowUsage);
  cli.app().add_flag("--json", json);
  for (auto [flag, target] : {std::pair{"--rank", &rank}, std::pair{"--step", &step}}) {
    addChecked(cli.app(), flag, [flag = std::string(flag), target = target](const std::string& v) {
      int64_t n = 0;
      std::string error = parseWhole(flag, v, INT64_MIN, n);
      *target = n;
      return error;
    });
  }
  cli.app().add_option("DIR", dir)->required();
  cli.app().add_option("NAME", name)->required();
  if (std::optional<int> done = cli.parse(args)) return *done;
  RecordSearch search(name, step);
  try {
    std::vector<RankRecording> ranks = openRecording(dir);
    bool rank_seen = false;
    for (const RankRecording& rr : ranks) {
      if (rank && rr.rank != *rank) continue;
      rank_seen = true;
      std::map<uint64_t, format::StackRecord> stacks;
      ReadDamage damage = readRecords(rr, ReadOptions{}, [&](format::OpRecord&& r) { search.visit(std::move(r)); }, stacks);
      if (damage.any()) std::cerr << "acc-analyzer: " << damage.describe(rr.dir + "/records.acc") << "\n";
      if (!search.found()) continue;
      const format::OpRecord& r = *search.found();
      auto stack = stacks.find(r.stack_id);
      const format::StackRecord* frames = r.stack_id != 0 && stack != stacks.end() ? &stack->second : nullptr;
      if (json) {
        nlohmann::json j = recordJson(r, rr.rank);
        j["stack"] = frames ? stackJson(*frames)["frames"] : nlohmann::json::array();
        std::cout << j.dump(2) << "\n";
      } else {
        printRecord(r, rr.rank, frames);
        if (search.steps().size() > 1) {
          std::printf("  (%s also occurs in %zu other step(s); --step S shows another)\n", r.name.c_str(),
                      search.steps().size() - 1);
        }
      }
      std::cout.flush();
      return damage.any() ? kExitInput : kExitOk;
    }
    if (rank && !rank_seen) {
      std::string have;
      for (const RankRecording& rr : ranks) have += (have.empty() ? "" : ", ") + std::to_string(rr.rank);
      std::cerr << "acc-analyzer show: " << dir << " has no rank " << *rank << " (ranks: " << have << ")\n";
      return kExitInput;
    }
  } catch (const InputError& e) {
    std::cerr << "acc-analyzer: " << e.what() << "\n";
    return kExitInput;
  }
  std::cerr << search.notFound("show", dir, rank);
  return kExitInput;
}

}  // namespace acc::analyzer
