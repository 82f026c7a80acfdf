#include "analyzer/msprobe/import.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <cstdlib>
#include <mutex>
#include <set>

#include "analyzer/msprobe/dump_dir.h"
#include "analyzer/msprobe/pt_file.h"
#include "analyzer/msprobe/statistics.h"
#include "analyzer/msprobe/torch_types.h"
#include "analyzer/read/recording.h"
#include "format/record.h"
#include "format/record_sink.h"

namespace acc::analyzer::msprobe {
namespace fs = std::filesystem;
namespace {

using format::Role;
using Json = nlohmann::ordered_json;

// What an entry key says: op, call number, pass, and for module entries
// the module's path.
struct Entry {
  enum Kind { Api, Module, ParameterGrads, Other } kind = Other;
  std::string op;
  std::string module;  // Module entries: the module's attribute path
  uint64_t n = 0;
  bool backward = false;
};

Entry parseKey(const std::string& key) {
  static const std::regex api(R"(^(.+)\.(\d+)\.(forward|backward)$)");
  static const std::regex module(R"(^(Module|Cell)\.(.+)\.([A-Za-z_][A-Za-z0-9_]*)\.(forward|backward)\.(\d+)$)");
  static const std::regex grads(R"(^(Module|Cell)\.(.+)\.([A-Za-z_][A-Za-z0-9_]*)\.parameters_grad(\.\d+)?$)");
  std::smatch m;
  Entry e;
  if (std::regex_match(key, m, module)) {
    e.kind = Entry::Module;
    e.op = m[1].str() + "." + m[2].str() + "." + m[3].str();
    e.module = m[2].str();
    e.backward = m[4] == "backward";
    e.n = std::stoull(m[5].str());
  } else if (std::regex_match(key, m, grads)) {
    e.kind = Entry::ParameterGrads;
    e.module = m[2].str();
  } else if (std::regex_match(key, m, api)) {
    e.kind = Entry::Api;
    e.op = m[1].str();
    e.n = std::stoull(m[2].str());
    e.backward = m[3] == "backward";
  }
  return e;
}

// The module path a parent entry names ("Module.enc.layers.0.Linear.forward.0"
// -> "enc.layers.0"); "" for none.
std::string modulePathOf(const std::string& parent) {
  const Entry e = parseKey(parent);
  return e.kind == Entry::Module ? e.module : "";
}

bool isTensorLeaf(const Json& v) {
  return v.is_object() && v.contains("type") && v["type"].is_string() && v.contains("dtype") && v.contains("shape");
}

// A non-tensor leaf as acc's scalar text.
std::string scalarText(const Json& v) {
  if (v.is_null()) return "None";
  if (!v.is_object() || !v.contains("value")) return v.dump();
  const Json& x = v["value"];
  if (x.is_boolean()) return x.get<bool>() ? "True" : "False";
  if (x.is_string()) {
    const std::string type = v.value("type", "");
    return type == "str" ? "\"" + x.get<std::string>() + "\"" : x.get<std::string>();
  }
  if (x.is_number_float()) {
    std::string s = x.dump();
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  }
  return x.dump();
}

class Importer {
 public:
  Importer(Imported& result) : result_(result) {}

  // Writes one rank's leaves (in step order) to rank_dir.
  void rank(int64_t rank, const std::vector<DumpLeaf>& leaves, const fs::path& rank_dir) {
    fs::create_directories(rank_dir);
    const std::string file = (rank_dir / "records.acc").string();
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw InputError(file + ": cannot be written");
    const std::string header = format::fileHeader();
    format::writeAll(fd, header.data(), header.size());
    format::RecordSink sink(fd, 3, 1, 1 << 20);
    sink_ = &sink;
    stacks_.clear();
    index_ = 0;
    nlohmann::json sources = nlohmann::json::array();
    for (const DumpLeaf& leaf : leaves) {
      leaf_ = &leaf;
      sources.push_back(leaf.dir);
      step(leaf);
    }
    sink.flush();
    ::close(fd);
    if (!sink.error().empty()) throw InputError(file + ": " + sink.error());
    sink_ = nullptr;
    nlohmann::json manifest = {
        {"format", "acc-recording"},
        {"format_version", format::kFormatVersion},
        {"status", "complete"},
        {"rank", rank},
        {"torch_version", "unknown (msprobe dump)"},
        {"devices", nlohmann::json::array()},
        {"config", {{"level", level_}}},
        {"counts", {{"recorded", index_}, {"written", index_}, {"dropped", 0}, {"lost_io", 0}}},
        {"msprobe", {{"task", result_.task}, {"level", msprobe_level_}, {"leaves", sources}}},
    };
    std::ofstream((rank_dir / "manifest.json").string()) << manifest.dump(2) << "\n";
  }

 private:
  void step(const DumpLeaf& leaf) {
    const Json dump = readDumpJson((fs::path(leaf.dir) / "dump.json").string());
    const std::string task = dump.value("task", "");
    if (task != "tensor" && task != "statistics") {
      throw InputError(leaf.dir + "/dump.json: task \"" + task +
                       "\" holds no tensors to compare; allowed: tensor or statistics");
    }
    if (!result_.task.empty() && result_.task != task) {
      throw InputError(leaf.dir + "/dump.json: task " + task + ", but other steps of the dump are " + result_.task);
    }
    result_.task = task;
    msprobe_level_ = dump.value("level", "");
    if (task == "tensor") level_ = 2;
    const auto stacks = readStacks((fs::path(leaf.dir) / "stack.json").string());
    const auto parents = readParents((fs::path(leaf.dir) / "construct.json").string());
    for (const auto& [key, value] : dump["data"].items()) {
      const Entry e = parseKey(key);
      if (e.kind == Entry::Other || !value.is_object()) {
        ++result_.skipped_entries;
        continue;
      }
      if (e.kind == Entry::ParameterGrads) {
        gradients(e, value);
        continue;
      }
      format::OpRecord r = base(e.op + "." + std::to_string(e.n) + (e.backward ? ".bwd" : ".fwd"), e.op);
      r.op_number = e.n;
      r.pass = e.backward ? format::Pass::Backward : format::Pass::Forward;
      if (e.backward) r.forward_name = e.op + "." + std::to_string(e.n) + ".fwd";
      // A module entry is in its own module; an API in its parent's, when
      // construct.json names parents (levels L0 and mix).
      auto parent = parents.find(key);
      if (e.kind == Entry::Module) {
        r.has_module = true;
        r.module = e.module;
      } else if (!parents.empty()) {
        r.has_module = true;
        r.module = parent != parents.end() ? modulePathOf(parent->second) : "";
      }
      if (!e.backward) {
        auto s = stacks.find(key);
        if (s != stacks.end()) r.stack_id = stackId(s->second);
      }
      key_ = key;
      if (e.backward) {
        list(value, "input", Role::GradIn, 0, r);
        list(value, "output", Role::GradOut, 0, r);
      } else {
        uint32_t next = list(value, "input_args", Role::Input, 0, r);
        next = object(value, "input_kwargs", Role::Input, next, r);
        object(value, "parameters", Role::Input, next, r);
        list(value, "output", Role::Output, 0, r);
      }
      emit(r);
    }
  }

  format::OpRecord base(std::string name, std::string op) {
    format::OpRecord r;
    r.index = index_++;
    r.name = std::move(name);
    r.op = std::move(op);
    r.step = leaf_->step;
    return r;
  }

  // {"weight": [leaf], "bias": [leaf]}: one grad:: record each.
  void gradients(const Entry& e, const Json& value) {
    for (const auto& [parameter, leaves] : value.items()) {
      format::OpRecord r = base("grad::" + e.module + "." + parameter, format::kGradientOp);
      r.has_module = true;
      r.module = e.module;
      key_ = "";
      const Json& leaf = leaves.is_array() && !leaves.empty() ? leaves[0] : leaves;
      if (isTensorLeaf(leaf)) tensor(leaf, Role::Input, 0, 0, r);
      emit(r);
    }
  }

  // A list section; returns the position after its last item.
  uint32_t list(const Json& entry, const char* section, Role role, uint32_t first, format::OpRecord& r) {
    if (!entry.contains(section) || !entry[section].is_array()) return first;
    uint32_t position = first;
    for (const Json& v : entry[section]) item(v, role, position++, r);
    return position;
  }

  uint32_t object(const Json& entry, const char* section, Role role, uint32_t first, format::OpRecord& r) {
    if (!entry.contains(section) || !entry[section].is_object()) return first;
    uint32_t position = first;
    for (const auto& [name, v] : entry[section].items()) item(v, role, position++, r);
    return position;
  }

  void item(const Json& v, Role role, uint32_t position, format::OpRecord& r) {
    if (isTensorLeaf(v)) {
      tensor(v, role, position, 0, r);
    } else if (v.is_array()) {
      // A tensor list (nested lists flattened into items).
      uint32_t k = 0;
      std::function<void(const Json&)> walk = [&](const Json& x) {
        if (isTensorLeaf(x)) {
          tensor(x, role, position, k++, r);
        } else if (x.is_array()) {
          for (const Json& y : x) walk(y);
        } else {
          ++k;
        }
      };
      walk(v);
      if (k == 0 && role == Role::Input) r.scalars.push_back({position, "[]"});
    } else if (role == Role::Input && !v.is_null()) {
      r.scalars.push_back({position, scalarText(v)});
    }
  }

  void tensor(const Json& leaf, Role role, uint32_t position, uint32_t item, format::OpRecord& r) {
    format::Tensor t;
    t.role = role;
    t.position = position;
    t.item = item;
    t.dtype = dtypeOfTorchName(leaf["dtype"].is_string() ? leaf["dtype"].get<std::string>() : "");
    if (leaf["shape"].is_array()) {
      for (const Json& d : leaf["shape"]) t.shape.push_back(d.is_number_integer() ? d.get<int64_t>() : 0);
    }
    t.strides.assign(t.shape.size(), 1);
    for (size_t d = t.shape.size(); d-- > 1;) t.strides[d - 1] = t.strides[d] * t.shape[d];
    t.has_stats = leaf.contains("Max");
    t.stats = statsOfLeaf(leaf, t.dtype, t.shape);
    if (leaf.contains("data_name") && leaf["data_name"].is_string()) {
      const std::string file = (fs::path(leaf_->dir) / "dump_tensor_data" / leaf["data_name"].get<std::string>()).string();
      try {
        PtTensor pt = readPt(file);
        if (pt.dtype != t.dtype || pt.shape != t.shape) {
          throw PtError(file + ": holds " + format::dtypeName(pt.dtype) + " of another shape than dump.json says");
        }
        // msprobe's statistics stay (a round trip keeps them); the counts
        // and the checksum come from the data.
        const format::Stats exact = statsOfData(pt.dtype, pt.data);
        t.stats.nan_count = exact.nan_count;
        t.stats.inf_count = exact.inf_count;
        t.stats.checksum = exact.checksum;
        if (!t.has_stats) t.stats = exact;
        t.has_stats = true;
        t.data = std::move(pt.data);
        t.data_size = t.data.size();
        t.has_data = true;
      } catch (const PtError& e) {
        if (++result_.unreadable_files <= 3) std::cerr << "acc-analyzer: " << e.what() << "; statistics only\n";
      }
    }
    ++result_.tensors;
    r.tensors.push_back(std::move(t));
  }

  uint64_t stackId(const std::vector<std::string>& frames) {
    auto it = stacks_.find(frames);
    if (it != stacks_.end()) return it->second;
    const uint64_t id = stacks_.size() + 1;
    stacks_[frames] = id;
    format::StackRecord s;
    s.id = id;
    for (const std::string& f : frames) s.frames.push_back({format::FrameKind::Python, f});
    std::string bytes;
    format::encode(s, bytes);
    sink_->add(bytes);
    return id;
  }

  void emit(const format::OpRecord& r) {
    std::string bytes;
    format::encode(r, bytes);
    format::appendData(r, bytes);
    sink_->add(bytes);
    if (sink_->pending() >= (1 << 20)) sink_->flush();
    ++result_.records;
  }

  Imported& result_;
  format::RecordSink* sink_ = nullptr;
  const DumpLeaf* leaf_ = nullptr;
  std::string key_;
  uint64_t index_ = 0;
  int level_ = 1;
  std::string msprobe_level_;
  std::map<std::vector<std::string>, uint64_t> stacks_;
};

}  // namespace

Imported importDump(const std::string& path, const std::string& out) {
  const std::vector<DumpLeaf> leaves = findLeaves(path);
  Imported result;
  result.dir = out;
  std::error_code ec;
  fs::remove_all(out, ec);
  std::map<int64_t, std::vector<DumpLeaf>> by_rank;
  std::set<int64_t> steps;
  for (const DumpLeaf& l : leaves) {
    by_rank[l.rank].push_back(l);
    steps.insert(l.step);
  }
  Importer importer(result);
  for (const auto& [rank, rank_leaves] : by_rank) {
    importer.rank(rank, rank_leaves, fs::path(out) / ("rank" + std::to_string(rank)));
  }
  result.ranks = by_rank.size();
  result.steps = steps.size();
  return result;
}

std::string importedCopy(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::string> copies;  // canonical path -> folder
  std::error_code ec;
  const std::string key = fs::weakly_canonical(path, ec).string();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = copies.find(key);
  if (it != copies.end()) return it->second;
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/acc-msprobe-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw InputError(pattern + ": cannot create a folder to read " + path + " into");
  if (copies.empty()) {
    std::atexit([] {
      std::error_code e;
      for (const auto& [from, dir] : copies) fs::remove_all(dir, e);
    });
  }
  copies[key] = pattern;
  const Imported i = importDump(path, pattern);
  std::cerr << "acc-analyzer: " << path << " is an msprobe dump (task " << i.task << ", " << i.ranks << " rank(s), "
            << i.steps << " step(s)): read as a recording of " << i.records << " records, " << i.tensors << " tensors";
  if (i.unreadable_files) std::cerr << ", " << i.unreadable_files << " tensor file(s) unreadable: statistics only";
  if (i.skipped_entries) std::cerr << ", " << i.skipped_entries << " entries of other kinds skipped";
  std::cerr << "\n";
  return pattern;
}

}  // namespace acc::analyzer::msprobe
