#include "analyzer/msprobe/export.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "analyzer/common/elements.h"
#include "analyzer/msprobe/pt_file.h"
#include "analyzer/msprobe/statistics.h"
#include "analyzer/msprobe/torch_types.h"
#include "analyzer/read/recording.h"
#include "analyzer/common/text.h"

namespace acc::analyzer::msprobe {
namespace fs = std::filesystem;
namespace {

using Json = nlohmann::ordered_json;
using format::Role;

// "aten::gelu" -> "Aten.gelu": msprobe's prefix, then the op. Ops read from
// an msprobe dump (Functional.gelu) keep their name.
std::string apiName(const std::string& op) {
  const size_t colons = op.find("::");
  if (colons == std::string::npos) return op.find('.') != std::string::npos ? op : "Torch." + op;
  std::string ns = op.substr(0, colons);
  if (ns == "c10d") ns = "Distributed";
  if (!ns.empty()) ns[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(ns[0])));
  return ns + "." + op.substr(colons + 2);
}

// msprobe's entry keys: an API's call number before the direction, a
// module's after it (Module.fc1.Linear.forward.0).
std::string entryKey(const std::string& api, uint64_t n, const char* direction) {
  const bool module = api.rfind("Module.", 0) == 0 || api.rfind("Cell.", 0) == 0;
  return module ? api + "." + direction + "." + std::to_string(n) : api + "." + std::to_string(n) + "." + direction;
}

// File and entry names keep to what msprobe's path check allows.
std::string safe(std::string s) {
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  return s;
}

// msprobe's compare refuses strings starting with these (spreadsheet
// formula injection); a space in front keeps the text.
std::string harmless(std::string s) {
  if (!s.empty() && std::string("+-=%@").find(s[0]) != std::string::npos) s.insert(0, " ");
  return s;
}

// acc's scalar text as msprobe's non-tensor leaf.
Json scalarLeaf(const std::string& text) {
  if (text == "None") return nullptr;
  if (text == "True" || text == "False") return Json{{"type", "bool"}, {"value", text == "True"}};
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
    return Json{{"type", "str"}, {"value", harmless(text.substr(1, text.size() - 2))}};
  }
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    Json list = Json::array();
    std::string inner = text.substr(1, text.size() - 2);
    size_t start = 0;
    while (start < inner.size()) {
      size_t comma = inner.find(',', start);
      if (comma == std::string::npos) comma = inner.size();
      std::string item = inner.substr(start, comma - start);
      item.erase(0, item.find_first_not_of(' '));
      if (!item.empty()) list.push_back(scalarLeaf(item));
      start = comma + 1;
    }
    return list;
  }
  char* end = nullptr;
  const long long i = std::strtoll(text.c_str(), &end, 10);
  if (!text.empty() && *end == '\0') return Json{{"type", "int"}, {"value", i}};
  const double d = std::strtod(text.c_str(), &end);
  if (!text.empty() && *end == '\0') return Json{{"type", "float"}, {"value", d}};
  return Json{{"type", "str"}, {"value", harmless(text)}};
}

// Statistics as msprobe writes them: integers' and bools' extremes in
// their own type, no mean or norm for them.
void putStats(Json& leaf, const format::Tensor& t) {
  const format::Stats& s = t.stats;
  auto real = [](double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); };
  if (t.dtype == format::Dtype::Bool) {
    leaf["Max"] = s.max != 0;
    leaf["Min"] = s.min != 0;
    leaf["Mean"] = nullptr;
    leaf["Norm"] = nullptr;
  } else if (!isFloating(t.dtype)) {
    leaf["Max"] = std::isfinite(s.max) ? Json(static_cast<int64_t>(s.max)) : Json(nullptr);
    leaf["Min"] = std::isfinite(s.min) ? Json(static_cast<int64_t>(s.min)) : Json(nullptr);
    leaf["Mean"] = nullptr;
    leaf["Norm"] = nullptr;
  } else {
    leaf["Max"] = real(s.max);
    leaf["Min"] = real(s.min);
    leaf["Mean"] = real(s.mean);
    leaf["Norm"] = real(s.norm);
  }
}

// "file:line function" -> msprobe's "File file, line N, in function, \n "
std::string msprobeFrame(const format::StackFrame& f) {
  if (f.kind == format::FrameKind::Python) {
    const size_t space = f.text.rfind(' ');
    const std::string where = space == std::string::npos ? f.text : f.text.substr(0, space);
    const std::string function = space == std::string::npos ? "?" : f.text.substr(space + 1);
    const size_t colon = where.rfind(':');
    if (colon != std::string::npos) {
      return "File " + where.substr(0, colon) + ", line " + where.substr(colon + 1) + ", in " + function + ", \n ";
    }
  }
  return harmless("File " + f.text + ", line 0, in <native>, \n ");
}

struct Step {
  fs::path dir;
  Json data = Json::object();
  Json construct = Json::object();
  std::map<uint64_t, std::vector<std::string>> stack_entries;  // stack id -> entries, first seen first
  std::vector<uint64_t> stack_order;
};

class Writer {
 public:
  Writer(const ExportOptions& o, Exported& result) : o_(o), result_(result) {}

  bool wanted(const format::OpRecord& r) const {
    if (o_.names.empty()) return true;
    const std::string name = lowerCase(r.name);
    return std::any_of(o_.names.begin(), o_.names.end(), [&](const std::string& n) { return name.find(n) != std::string::npos; });
  }

  void rank(const RankRecording& rank) {
    std::map<uint64_t, format::StackRecord> stacks;
    ReadDamage damage;
    const std::vector<format::OpRecord> sorted = loadSorted(rank, stacks, damage);
    // Entry keys, from execution order.
    std::map<uint64_t, std::string> key_of;
    std::map<std::pair<int64_t, std::string>, uint64_t> forward_n;
    std::map<std::pair<int64_t, std::string>, uint64_t> calls;
    bool data = false;
    for (const format::OpRecord& r : sorted) {
      if (!wanted(r)) continue;
      ++result_.records_matched;
      for (const format::Tensor& t : r.tensors) data = data || t.has_data;
      const std::string api = apiName(r.op);
      if (r.op == format::kGradientOp) {
        ++result_.left_out;
      } else if (r.pass == format::Pass::Forward) {
        const uint64_t n = calls[{r.step, api}]++;
        forward_n[{r.step, r.name}] = n;
        key_of[r.index] = safe(entryKey(api, n, "forward"));
      } else if (r.name.size() >= 4 && r.name.compare(r.name.size() - 4, 4, ".bwd") == 0) {
        auto it = forward_n.find({r.step, r.forward_name});
        const uint64_t n = it != forward_n.end() ? it->second : calls[{r.step, api + " backward"}]++;
        key_of[r.index] = safe(entryKey(api, n, "backward"));
      } else {
        ++result_.left_out;  // a forward op's second or later autograd node
      }
    }
    const std::string task = data ? "tensor" : "statistics";
    if (!result_.task.empty() && result_.task != task) {
      throw InputError("the ranks of " + o_.dir + " were recorded at different levels: exported dumps of tasks " +
                       result_.task + " and " + task + " would not compare");
    }
    result_.task = task;
    // The records again, with their data, in file order.
    std::map<int64_t, Step> steps;
    std::map<uint64_t, std::pair<int64_t, Json>> entries;
    ReadOptions read;
    read.with_data = data;
    std::map<uint64_t, format::StackRecord> ignored;
    ReadDamage damage2 = readRecords(rank, read, [&](format::OpRecord&& r) {
      auto k = key_of.find(r.index);
      if (k == key_of.end()) return;
      Step& s = steps[r.step];
      if (s.dir.empty()) s.dir = fs::path(o_.out) / ("step" + std::to_string(r.step)) / ("rank" + std::to_string(rank.rank));
      entries[r.index] = {r.step, entry(r, k->second, s.dir)};
    }, ignored);
    if (damage.any() || damage2.any()) {
      std::cerr << "acc-analyzer: " << (damage.any() ? damage : damage2).describe(rank.dir + "/records.acc") << "\n";
      result_.damaged = true;
    }
    // Entries in execution order, stacks for forward entries.
    for (const format::OpRecord& r : sorted) {
      auto e = entries.find(r.index);
      if (e == entries.end()) continue;
      Step& s = steps[e->second.first];
      const std::string& key = key_of[r.index];
      s.data[key] = std::move(e->second.second);
      s.construct[key] = nullptr;
      ++result_.entries;
      if (r.pass == format::Pass::Forward && r.stack_id != 0 && stacks.count(r.stack_id)) {
        auto& list = s.stack_entries[r.stack_id];
        if (list.empty()) s.stack_order.push_back(r.stack_id);
        list.push_back(key);
      }
    }
    for (auto& [step, s] : steps) write(s, stacks, task);
  }

 private:
  Json entry(const format::OpRecord& r, const std::string& key, const fs::path& dir) {
    Json e = Json::object();
    if (r.pass == format::Pass::Forward) {
      e["input_args"] = section(r, Role::Input, key, "input", dir);
      e["input_kwargs"] = Json::object();
      e["output"] = section(r, Role::Output, key, "output", dir);
    } else {
      e["input"] = section(r, Role::GradIn, key, "input", dir);
      e["output"] = section(r, Role::GradOut, key, "output", dir);
    }
    return e;
  }

  // One of an entry's lists: its items by position, null where nothing was
  // recorded, a list where a position holds several tensors.
  Json section(const format::OpRecord& r, Role role, const std::string& key, const char* name, const fs::path& dir) {
    std::map<uint32_t, std::vector<const format::Tensor*>> tensors;
    std::map<uint32_t, std::string> scalars;
    uint32_t size = 0;
    for (const format::Tensor& t : r.tensors) {
      if (t.role != role) continue;
      tensors[t.position].push_back(&t);
      size = std::max(size, t.position + 1);
    }
    if (role == Role::Input) {
      for (const format::Scalar& s : r.scalars) {
        scalars[s.position] = s.value;
        size = std::max(size, s.position + 1);
      }
    }
    Json list = Json::array();
    for (uint32_t p = 0; p < size; ++p) {
      auto t = tensors.find(p);
      if (t != tensors.end()) {
        const bool many = t->second.size() > 1 || t->second.front()->item > 0;
        if (!many) {
          list.push_back(leaf(*t->second.front(), key + "." + name + "." + std::to_string(p), dir));
        } else {
          Json items = Json::array();
          for (const format::Tensor* x : t->second) {
            while (items.size() < x->item) items.push_back(nullptr);
            items.push_back(leaf(*x, key + "." + name + "." + std::to_string(p) + "." + std::to_string(x->item), dir));
          }
          list.push_back(std::move(items));
        }
      } else if (scalars.count(p)) {
        list.push_back(scalarLeaf(scalars[p]));
      } else {
        list.push_back(nullptr);
      }
    }
    return list;
  }

  Json leaf(const format::Tensor& t, const std::string& stem, const fs::path& dir) {
    Json j = {{"type", "torch.Tensor"}, {"dtype", torchName(t.dtype)}, {"shape", t.shape}};
    if (t.has_stats) putStats(j, t);
    ++result_.tensors;
    if (t.has_data) {
      const std::string file = stem + ".pt";
      fs::create_directories(dir / "dump_tensor_data");
      PtTensor pt{t.dtype, t.shape, t.data};
      writePt((dir / "dump_tensor_data" / file).string(), pt);
      j["data_name"] = file;
      ++result_.files;
    }
    return j;
  }

  void write(Step& s, const std::map<uint64_t, format::StackRecord>& stacks, const std::string& task) {
    fs::create_directories(s.dir);
    const bool tensors = fs::exists(s.dir / "dump_tensor_data");
    Json dump = {{"task", task},
                 {"level", "L1"},
                 {"framework", "pytorch"},
                 {"dump_data_dir", tensors ? Json(fs::absolute(s.dir / "dump_tensor_data").string()) : Json(nullptr)},
                 {"data", std::move(s.data)}};
    Json stack = Json::object();
    for (uint64_t id : s.stack_order) {
      Json frames = Json::array();
      for (const format::StackFrame& f : stacks.at(id).frames) frames.push_back(msprobeFrame(f));
      stack[std::to_string(stack.size())] = Json::array({s.stack_entries[id], frames});
    }
    auto save = [&](const std::string& name, const Json& j) {
      const std::string path = (s.dir / name).string();
      std::ofstream out(path, std::ios::trunc);
      out << j.dump(1, ' ', true, nlohmann::json::error_handler_t::replace);
      out.close();
      if (out.fail()) throw std::runtime_error(path + ": write error");
    };
    save("dump.json", dump);
    save("stack.json", stack);
    save("construct.json", s.construct);
  }

  const ExportOptions& o_;
  Exported& result_;
};

}  // namespace

Exported exportDump(const ExportOptions& o) {
  Exported result;
  Writer writer(o, result);
  bool rank_seen = false;
  for (const RankRecording& rank : openRecording(o.dir)) {
    if (o.rank && rank.rank != *o.rank) continue;
    rank_seen = true;
    writer.rank(rank);
  }
  if (!rank_seen) throw InputError(o.dir + " has no rank " + std::to_string(*o.rank));
  return result;
}

}  // namespace acc::analyzer::msprobe
