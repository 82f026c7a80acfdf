// acc-analyzer repro DIR NAME -o OUT: one recorded op as a self-contained
// reproduction (its inputs as .npy files, op.json naming the op and its
// arguments, and repro.py, which runs it on a device of the user's choice
// and prints its error against float64): what a kernel bug report needs.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "analyzer/cli/command_line.h"
#include "analyzer/cli/commands.h"
#include "analyzer/report/npy_writer.h"
#include "analyzer/read/numeric_settings.h"
#include "analyzer/read/record_search.h"
#include "analyzer/judge/replay_inputs.h"
#include "analyzer/repro/repro_script.h"

namespace acc::analyzer {
namespace {

namespace fs = std::filesystem;

constexpr const char* kReproUsage =
    "usage: acc-analyzer repro DIR NAME -o OUT [--step S] [--rank R]\n"
    "\n"
    "Writes a self-contained reproduction of record NAME of the level-2 recording\n"
    "in DIR: OUT/inputs/ (its recorded inputs, and for a backward record its\n"
    "forward op's inputs and the incoming gradients, as .npy files), OUT/recorded/\n"
    "(what the recorded run produced), OUT/op.json (the op's schema name, overload\n"
    "and every argument) and OUT/repro.py, which re-runs the op with torch on a\n"
    "device given on its command line and prints each produced tensor's error\n"
    "against a float64 run on the CPU, for the recorded run, the CPU kernel and\n"
    "that device:\n"
    "\n"
    "  python3 OUT/repro.py [--device cuda:0] [--setup load_plugin.py] [--json]\n"
    "\n"
    "NAME is a record name as `list` prints it (aten::gelu.81.fwd); op numbers\n"
    "restart every step: the first in execution order is taken unless --step\n"
    "picks one.\n"
    "\n"
    "  -o, --output OUT  the directory to write (created; existing files replaced)\n"
    "  --step S          the record of training step S\n"
    "  --rank R          read rank R (default: the first rank holding NAME)\n"
    "\n"
    "Exit codes: 0 written; 2 usage error, NAME not found, or a record that\n"
    "cannot be re-run (recorded without data, random, a composite op's extra\n"
    "autograd node: the message says which).\n";

struct Options {
  std::string dir, name, out;
  std::optional<int64_t> step, rank;
};

std::string fileName(const format::Tensor& t) {
  return std::string(format::roleName(t.role)) + std::to_string(t.position) + (t.item ? "_" + std::to_string(t.item) : "") +
         ".npy";
}

// Writes `t` under OUT/`folder`; returns its op.json entry.
nlohmann::json writeTensor(const fs::path& out, const std::string& folder, const format::Tensor& t) {
  const std::string rel = folder + "/" + fileName(t);
  writeNpy((out / rel).string(), t.dtype, t.shape, t.data);
  return {{"file", rel}, {"dtype", format::dtypeName(t.dtype)}, {"role", format::roleName(t.role)},
          {"position", t.position}, {"item", t.item}, {"shape", t.shape}};
}

// op.json's "arguments": by schema position, the recorded tensors (a list:
// repro.py takes the first unless the schema wants a list; null for list
// items not recorded) or a recorded value's text.
nlohmann::json argumentsJson(const format::OpRecord& op, const fs::path& out) {
  nlohmann::json args = nlohmann::json::object();
  std::map<uint32_t, std::map<uint32_t, const format::Tensor*>> tensors;
  for (const format::Tensor& t : op.tensors) {
    if (t.role == format::Role::Input) tensors[t.position][t.item] = &t;
  }
  for (const auto& [position, items] : tensors) {
    nlohmann::json entries = nlohmann::json::array();
    for (uint32_t k = 0; k <= items.rbegin()->first; ++k) {
      auto it = items.find(k);
      entries.push_back(it == items.end() ? nlohmann::json() : writeTensor(out, "inputs", *it->second));
    }
    args[std::to_string(position)] = {{"tensors", entries}};
  }
  for (const format::Scalar& s : op.scalars) {
    if (!tensors.count(s.position)) args[std::to_string(s.position)] = {{"value", s.value}};
  }
  return args;
}

}  // namespace

int reproCommand(const std::vector<std::string>& argv) {
  Options o;
  CommandLine cli("repro", kReproUsage);
  CLI::App& app = cli.app();
  app.add_option("-o,--output", o.out);
  for (auto [flag, target] : {std::pair{"--step", &o.step}, std::pair{"--rank", &o.rank}}) {
    addChecked(app, flag, [flag = std::string(flag), target = target](const std::string& v) {
      int64_t n = 0;
      std::string error = parseWhole(flag, v, 0, n);
      *target = n;
      return error;
    });
  }
  app.add_option("DIR", o.dir)->required();
  app.add_option("NAME", o.name)->required();
  if (std::optional<int> done = cli.parse(argv)) return *done;
  if (o.out.empty()) {
    std::cerr << "acc-analyzer repro: -o OUT is required (the directory to write the reproduction to)\n\n" << kReproUsage;
    return kExitInput;
  }
  try {
    RecordSearch search(o.name, o.step);
    std::optional<ReplayItem> item;
    const RankRecording* where = nullptr;
    const std::vector<RankRecording> ranks = openRecording(o.dir);
    for (const RankRecording& rank : ranks) {
      if (o.rank && rank.rank != *o.rank) continue;
      ReadDamage damage = forEachReplayItem(
          rank,
          [&](const format::OpRecord& meta) {
            if (!search.wants(meta)) return false;
            search.take(meta);
            return true;
          },
          [&](ReplayItem&& found) {
            if (found.index == search.found()->index) item = std::move(found);
          });
      if (damage.any()) std::cerr << "acc-analyzer: " << damage.describe(rank.dir + "/records.acc") << "\n";
      if (item) {
        where = &rank;
        break;
      }
    }
    if (!item) {
      std::cerr << search.notFound("repro", o.dir, o.rank);
      return kExitInput;
    }
    const format::OpRecord& record = *search.found();
    if (!item->not_replayable.empty()) {
      std::cerr << "acc-analyzer repro: " << record.name << " (step " << record.step << ") cannot be re-run: "
                << item->not_replayable << "\n";
      return kExitInput;
    }
    const std::vector<format::OpRecord>& parts = item->request.records;  // [forward,] inputs
    const format::OpRecord& op = parts.front();
    const fs::path out(o.out);
    fs::create_directories(out / "inputs");
    fs::create_directories(out / "recorded");
    nlohmann::json spec = {{"format", "acc-repro"},
                           {"format_version", 1},
                           {"recording", o.dir},
                           {"name", record.name},
                           {"op", op.op},
                           {"overload", op.overload},
                           {"pass", format::passName(record.pass)},
                           {"step", record.step},
                           {"rank", where->rank},
                           {"index", record.index},
                           {"arguments", argumentsJson(op, out)}};
    std::string device = "cpu";
    for (const format::Tensor& t : op.tensors) {
      if (offCpu(t)) device = t.device;
    }
    spec["recorded_device"] = device;
    nlohmann::json grad_in = nlohmann::json::array(), produced = nlohmann::json::array();
    if (parts.size() > 1) {
      for (const format::Tensor& t : parts.back().tensors) {
        if (t.role == format::Role::GradIn) grad_in.push_back(writeTensor(out, "inputs", t));
      }
    }
    for (const format::Tensor& t : item->recorded.tensors) {
      if (t.has_data) produced.push_back(writeTensor(out, "recorded", t));
    }
    spec["grad_in"] = grad_in;
    spec["produced"] = produced;
    {
      std::ofstream json(out / "op.json", std::ios::trunc);
      json << spec.dump(2) << "\n";
      std::ofstream script(out / "repro.py", std::ios::trunc);
      script << kReproScript;
      if (!json || !script) throw std::runtime_error((out / "repro.py").string() + ": write error");
    }
    fs::permissions(out / "repro.py", fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add);
    std::cout << "acc-analyzer repro: wrote " << (out / "repro.py").string() << " for " << record.name << " ("
              << op.op << "." << (op.overload.empty() ? "default" : op.overload) << ", step " << record.step
              << ", rank " << where->rank << ", recorded on " << device << ")\n"
              << "  run it: python3 " << (out / "repro.py").string() << " [--device cuda:0]\n";
    return kExitOk;
  } catch (const InputError& e) {
    std::cerr << "acc-analyzer: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "acc-analyzer repro: " << e.what() << "\n";
  }
  return kExitInput;
}

}  // namespace acc::analyzer
