// acc-analyzer export DIR -o OUT --format npy: recorded tensor data as .npy
// files with an index.json; --format msprobe: the recording in msprobe's
// dump layout (analyzer/msprobe/export.h).
#include <cstdint>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <tuple>

#include "analyzer/cli/command_line.h"
#include "analyzer/cli/commands.h"
#include "analyzer/msprobe/export.h"
#include "analyzer/report/npy_writer.h"
#include "analyzer/read/recording.h"
#include "analyzer/common/text.h"

namespace acc::analyzer {
namespace fs = std::filesystem;
namespace {

constexpr const char* kExportUsage =
    "usage: acc-analyzer export DIR -o OUT [--format npy|msprobe] [--name SUBSTR]... [--rank R]\n"
    "\n"
    "Writes every tensor of the recording in DIR that carries data (recorded with\n"
    "ACC_LEVEL=2) as a NumPy .npy file, and OUT/index.json listing each file with\n"
    "its record (name, op, pass, step, rank, index), role, position, item, dtype\n"
    "and shape. Files are named\n"
    "  OUT/{rank directory}/step{S}/{record name}.{role}{position}[_{item}].npy\n"
    "with characters other than letters, digits, '.', '-' and '_' replaced by '_'.\n"
    "\n"
    "  -o, --output OUT   output directory (created when missing)\n"
    "  --format npy       the file format: npy (default), or msprobe, below\n"
    "  --name SUBSTR      only records whose name contains SUBSTR, case-insensitive;\n"
    "                     repeat for several (a record matching any is exported)\n"
    "  --rank R           only rank R\n"
    "\n"
    "dtypes: bool, uint8, int8, int16, int32, int64, float16 ('<f2'), float32,\n"
    "float64, complex64 and complex128 keep their numpy dtype. bfloat16 has none:\n"
    "it is exported as float32 ('<f4'), which holds every bfloat16 value exactly;\n"
    "index.json keeps \"dtype\": \"bfloat16\" and gives \"npy_dtype\": \"<f4\".\n"
    "\n"
    "--format msprobe writes the recording as Huawei msprobe's dump, which\n"
    "msprobe's compare and graph_visualize read:\n"
    "  OUT/step{S}/rank{R}/dump.json, stack.json, construct.json\n"
    "  and dump_tensor_data/*.pt (torch.save files) where data was recorded:\n"
    "task \"tensor\" for a level-2 recording, \"statistics\" otherwise. Records\n"
    "become entries {Prefix}.{op}.{n}.{forward|backward} (aten::gelu is\n"
    "Aten.gelu, c10d:: ops are Distributed), n counting the op's forward calls\n"
    "in the step; gradient records and a forward op's later autograd nodes\n"
    "have no place there and are counted as left out.\n"
    "\n"
    "Exit codes: 0 exported; 2 usage error, unreadable or damaged recording (the\n"
    "readable tensors are still exported), no tensor data (a level 0 or 1\n"
    "recording), or no record matching --name.\n";

std::string safeFileName(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  return out;
}

struct Options {
  std::string dir, out, format = "npy";
  std::vector<std::string> names;  // lower case
  std::optional<int64_t> rank;
};

// Returns an exit code when parsing ends the command.
std::optional<int> parse(const std::vector<std::string>& args, Options& o) {
  CommandLine cli("export", kExportUsage);
  CLI::App& app = cli.app();
  app.add_option("-o,--output", o.out);
  addChecked(app, "--format", [&o](const std::string& v) {
    o.format = v;
    return v == "npy" || v == "msprobe" ? "" : "unknown --format '" + v + "' (supported: npy, msprobe)";
  });
  addChecked(app, "--name", [&o](const std::string& v) {
    o.names.push_back(lowerCase(v));
    return "";
  });
  addChecked(app, "--rank", [&o](const std::string& v) {
    int64_t n = 0;
    std::string error = parseWhole("--rank", v, INT64_MIN, n);
    o.rank = n;
    return error;
  });
  app.add_option("DIR", o.dir);
  if (std::optional<int> done = cli.parse(args)) return done;
  if (o.dir.empty() || o.out.empty()) {
    std::cerr << "acc-analyzer export: DIR and -o OUT are required\n\n" << kExportUsage;
    return kExitInput;
  }
  return std::nullopt;
}

struct Exported {
  std::string rank_dir;
  uint64_t index = 0;
  size_t tensor = 0;
  nlohmann::json entry;
};

class Exporter {
 public:
  explicit Exporter(const Options& o) : o_(o) {}

  bool wanted(const format::OpRecord& r) const {
    if (o_.names.empty()) return true;
    std::string name = lowerCase(r.name);
    return std::any_of(o_.names.begin(), o_.names.end(),
                       [&](const std::string& n) { return name.find(n) != std::string::npos; });
  }

  void add(const RankRecording& rank, const format::OpRecord& r) {
    ++matched_;
    const std::string rank_dir = fs::path(rank.dir).filename().string();
    for (size_t k = 0; k < r.tensors.size(); ++k) {
      const format::Tensor& t = r.tensors[k];
      if (!t.has_data) continue;
      ++with_data_;
      std::string rel = rank_dir + "/step" + std::to_string(r.step) + "/" + safeFileName(r.name) + "." +
                        format::roleName(t.role) + std::to_string(t.position) +
                        (t.item ? "_" + std::to_string(t.item) : "");
      if (!used_.insert(rel).second) rel += "_r" + std::to_string(r.index);  // a name repeated within a step
      used_.insert(rel);
      rel += ".npy";
      fs::path file = fs::path(o_.out) / rel;
      fs::create_directories(file.parent_path());
      try {
        writeNpy(file.string(), t.dtype, t.shape, t.data);
      } catch (const std::runtime_error& e) {
        std::cerr << "acc-analyzer export: skipped " << e.what() << "\n";
        ++skipped_;
        continue;
      }
      files_.push_back({rank_dir, r.index, k,
                        {{"file", rel}, {"name", r.name}, {"op", r.op}, {"pass", format::passName(r.pass)},
                         {"step", r.step}, {"rank", rank.rank}, {"index", r.index},
                         {"role", format::roleName(t.role)}, {"position", t.position}, {"item", t.item},
                         {"dtype", format::dtypeName(t.dtype)}, {"npy_dtype", npyDescr(t.dtype)},
                         {"shape", t.shape}, {"device", t.device}}});
    }
  }

  void writeIndex() {
    std::stable_sort(files_.begin(), files_.end(), [](const Exported& a, const Exported& b) {
      return std::tie(a.rank_dir, a.index, a.tensor) < std::tie(b.rank_dir, b.index, b.tensor);
    });
    nlohmann::json head = {{"format", "acc-export"}, {"format_version", 1}, {"source", o_.dir},
                           {"bfloat16", "exported as float32 (exact)"}};
    const std::string path = (fs::path(o_.out) / "index.json").string();
    std::ofstream out(path, std::ios::trunc);
    if (!out) throw std::runtime_error(path + ": cannot create file");
    auto dump = [](const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); };
    std::string text = dump(head);  // then "files", one per line
    out << text.substr(0, text.size() - 1) << ",\"files\":[\n";
    for (size_t i = 0; i < files_.size(); ++i) out << dump(files_[i].entry) << (i + 1 < files_.size() ? ",\n" : "\n");
    out << "]}\n";
    out.close();
    if (out.fail()) throw std::runtime_error(path + ": write error");
  }

  size_t matched() const { return matched_; }
  size_t withData() const { return with_data_; }
  size_t written() const { return files_.size(); }
  size_t skipped() const { return skipped_; }

 private:
  const Options& o_;
  size_t matched_ = 0, with_data_ = 0, skipped_ = 0;
  std::set<std::string> used_;
  std::vector<Exported> files_;
};

std::string levelOf(const std::vector<RankRecording>& ranks) {
  for (const RankRecording& r : ranks) {
    if (r.manifest.contains("config") && r.manifest["config"].contains("level")) {
      return r.manifest["config"]["level"].dump();
    }
  }
  return "?";
}

}  // namespace

int exportMsprobe(const Options& o) {
  msprobe::ExportOptions m{o.dir, o.out, o.names, o.rank};
  const msprobe::Exported e = msprobe::exportDump(m);
  if (e.records_matched == 0) {
    std::cerr << "acc-analyzer export: no record in " << o.dir << " matches --name; nothing exported\n";
    return kExitInput;
  }
  std::cout << "exported " << e.entries << " record(s) as msprobe entries (task " << e.task << ", " << e.tensors
            << " tensor(s), " << e.files << " .pt file(s)) to " << o.out;
  if (e.left_out) std::cout << "; " << e.left_out << " left out (gradient records, later autograd nodes)";
  std::cout << "\n";
  return e.damaged ? kExitInput : kExitOk;
}

int exportCommand(const std::vector<std::string>& args) {
  Options o;
  if (std::optional<int> done = parse(args, o)) return *done;
  try {
    if (o.format == "msprobe") return exportMsprobe(o);
    std::vector<RankRecording> ranks = openRecording(o.dir);
    Exporter exporter(o);
    bool damaged = false, rank_seen = false;
    for (const RankRecording& rank : ranks) {
      if (o.rank && rank.rank != *o.rank) continue;
      rank_seen = true;
      std::map<uint64_t, format::StackRecord> stacks;
      ReadOptions read;
      read.with_data = true;
      ReadDamage damage = readRecords(rank, read, [&](format::OpRecord&& r) {
        if (exporter.wanted(r)) exporter.add(rank, r);
      }, stacks);
      if (damage.any()) {
        std::cerr << "acc-analyzer: " << damage.describe(rank.dir + "/records.acc") << "\n";
        damaged = true;
      }
    }
    if (!rank_seen) {
      std::cerr << "acc-analyzer export: " << o.dir << " has no rank " << *o.rank << "\n";
      return kExitInput;
    }
    if (exporter.matched() == 0) {
      std::cerr << "acc-analyzer export: no record in " << o.dir << " matches --name; nothing exported\n";
      return kExitInput;
    }
    if (exporter.withData() == 0) {
      std::cerr << "acc-analyzer export: " << o.dir << " holds no tensor data (recorded at ACC_LEVEL="
                << levelOf(ranks) << "; data is recorded at ACC_LEVEL=2); nothing exported\n";
      return kExitInput;
    }
    exporter.writeIndex();
    std::cout << "exported " << exporter.written() << " tensor(s) of " << exporter.matched() << " record(s) to "
              << o.out << " (index.json lists them)";
    if (exporter.skipped()) std::cout << "; " << exporter.skipped() << " skipped (see above)";
    std::cout << "\n";
    return damaged || exporter.skipped() ? kExitInput : kExitOk;
  } catch (const InputError& e) {
    std::cerr << "acc-analyzer: " << e.what() << "\n";
  } catch (const std::exception& e) {  // filesystem and write errors
    std::cerr << "acc-analyzer export: " << e.what() << "\n";
  }
  return kExitInput;
}

}  // namespace acc::analyzer
