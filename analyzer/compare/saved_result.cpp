#include "analyzer/compare/saved_result.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "analyzer/compare/gradients.h"
#include "analyzer/compare/modules.h"
#include "analyzer/compare/record_spill.h"
#include "analyzer/compare/steps.h"
#include "analyzer/read/recording.h"
#include "analyzer/report/report_set.h"
#include "analyzer/report/summary.h"

namespace acc::analyzer {
namespace {
namespace fs = std::filesystem;

nlohmann::json unmatchedJson(const UnmatchedRecord& u) {
  return {{"side", u.side},   {"name", u.name},   {"op", u.op},
          {"step", u.step},   {"rank", u.rank},   {"index", u.index},
          {"output_checksum", u.output_checksum}, {"grad_fn", u.grad_fn}};
}

UnmatchedRecord unmatchedOf(const nlohmann::json& j) {
  UnmatchedRecord u;
  u.side = j.at("side").get<int>();
  u.name = j.at("name").get<std::string>();
  u.op = j.at("op").get<std::string>();
  u.step = j.at("step").get<int64_t>();
  u.rank = j.at("rank").get<int64_t>();
  u.index = j.at("index").get<uint64_t>();
  u.output_checksum = j.at("output_checksum").get<uint64_t>();
  u.grad_fn = j.at("grad_fn").get<std::string>();
  return u;
}

// A hard link where the spill lies beside the reports (the usual case),
// else a copy.
void placeFile(const std::string& from, const fs::path& to) {
  std::error_code ec;
  fs::create_hard_link(from, to, ec);
  if (ec) fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

// One saved comparison, read back.
struct Saved {
  std::string dir;
  nlohmann::json j;
  struct Part {
    std::string path;
    uint64_t count = 0, bytes = 0, offset = 0;  // offset: its first row's position in this comparison
    int64_t rank = 0;
    uint64_t merged_offset = 0;                  // in the merged comparison
  };
  std::vector<Part> parts;

  // A position in this comparison, in the merged one.
  size_t mergedPosition(uint64_t position) const {
    for (const Part& p : parts) {
      if (position >= p.offset && position < p.offset + p.count) return p.merged_offset + (position - p.offset);
    }
    throw InputError(dir + "/" + kSavedResultFile + ": row " + std::to_string(position) + " is in none of its parts");
  }
};

Saved load(const std::string& dir) {
  Saved s;
  s.dir = dir;
  const std::string path = dir + "/" + kSavedResultFile;
  std::ifstream in(path);
  if (!in) {
    throw InputError(dir + ": no saved comparison (" + kSavedResultFile +
                     "): give merge the report directories of acc-analyzer compare");
  }
  try {
    s.j = nlohmann::json::parse(in);
    const int version = s.j.at("rows_version").get<int>();
    if (version != kRowsVersion) {
      throw InputError(dir + ": its rows were written by another acc-analyzer (rows version " + std::to_string(version) +
                       ", this one reads " + std::to_string(kRowsVersion) + "); compare its ranks again with this one");
    }
    uint64_t offset = 0;
    for (const nlohmann::json& p : s.j.at("parts")) {
      Saved::Part part;
      part.path = dir + "/" + p.at("file").get<std::string>();
      part.count = p.at("count").get<uint64_t>();
      part.bytes = p.at("bytes").get<uint64_t>();
      part.rank = p.at("rank").get<int64_t>();
      part.offset = offset;
      offset += part.count;
      if (!fs::exists(part.path)) throw InputError(part.path + ": missing (compare keeps its rows there)");
      s.parts.push_back(std::move(part));
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": not a saved comparison (" + e.what() + ")");
  }
  return s;
}

}  // namespace

std::string saveResult(const CompareResult& r, const SavedJudgement& judgement, const std::string& dir) {
  if (!r.spill) return "no judged rows to keep";
  try {
    // An earlier comparison's, gone first: a save that fails leaves none.
    fs::remove(fs::path(dir) / kSavedResultFile);
    const fs::path rows = fs::path(dir) / "rows";
    fs::remove_all(rows);
    fs::create_directories(rows);
    nlohmann::json parts = nlohmann::json::array();
    const std::vector<RecordSpill::PartFile> files = r.spill->files();
    for (size_t k = 0; k < files.size(); ++k) {
      const std::string name = "part-" + std::to_string(k) + ".rows";
      placeFile(files[k].path, rows / name);
      parts.push_back({{"file", "rows/" + name},
                       {"count", files[k].count},
                       {"bytes", files[k].bytes},
                       {"rank", k < r.part_ranks.size() ? r.part_ranks[k] : 0}});
    }
    // The rows referred to by position, as compare last judged them.
    RecordSpill kept;
    RecordSpill::Part& part = kept.addFile((rows / "kept.rows").string());
    nlohmann::json positions = nlohmann::json::array();
    for (const auto& [position, record] : r.kept) {
      part.append(record);
      positions.push_back(position);
    }
    part.close();
    nlohmann::json unmatched = nlohmann::json::array();
    for (const UnmatchedRecord& u : r.unmatched) unmatched.push_back(unmatchedJson(u));
    nlohmann::json settings = nlohmann::json::array();
    for (const SettingDifference& d : r.settings_differ) settings.push_back(settingDifferenceJson(d));
    const nlohmann::json j = {
        {"rows_version", kRowsVersion},
        {"threshold_flags", judgement.threshold_flags},
        {"op_list", judgement.op_list},
        {"dir0", r.dir0},
        {"dir1", r.dir1},
        {"parts", parts},
        {"kept", positions},
        {"origins", r.origins},
        {"first_failing", r.first_failing == SIZE_MAX ? nlohmann::json() : nlohmann::json(r.first_failing)},
        {"origins_not_kept", r.origins_not_kept},
        {"tensors_compared", r.tensors_compared},
        {"bytes_compared", r.bytes_compared},
        {"peak_held_bytes", r.peak_held_bytes},
        {"pairs_reused", r.pairs_reused},
        {"seconds", r.seconds},
        {"problems", r.problems},
        {"notes", r.notes},
        {"recording_notes", r.recording_notes},
        {"replay_stderr", {{"lines", r.replay_stderr.lines}, {"first", r.replay_stderr.first}}},
        {"unmatched", unmatched},
        {"unmatched_not_listed", {r.unmatched_not_listed[0], r.unmatched_not_listed[1]}},
        {"records0", r.records0},
        {"records1", r.records1},
        {"numerics0", r.numerics0},
        {"numerics1", r.numerics1},
        {"settings_differ", settings},
    };
    const fs::path target = fs::path(dir) / kSavedResultFile;
    const fs::path partial = fs::path(dir) / (std::string(kSavedResultFile) + ".partial");
    {
      std::ofstream out(partial);
      out << j.dump(1) << "\n";
      if (!out) return partial.string() + ": cannot be written";
    }
    fs::rename(partial, target);
  } catch (const std::exception& e) {
    return std::string("the judged rows could not be kept: ") + e.what();
  }
  return "";
}

CompareResult mergeResults(const std::vector<std::string>& dirs, SavedJudgement& judgement) {
  std::vector<Saved> saved;
  for (const std::string& d : dirs) saved.push_back(load(d));
  for (size_t i = 0; i < saved.size(); ++i) {
    SavedJudgement mine;
    try {
      mine.threshold_flags =
          saved[i].j.at("threshold_flags").get<std::vector<std::pair<std::string, std::string>>>();
      mine.op_list = saved[i].j.at("op_list").get<std::vector<std::string>>();
    } catch (const nlohmann::json::exception& e) {
      throw InputError(saved[i].dir + "/" + kSavedResultFile + ": not a saved comparison (" + e.what() + ")");
    }
    if (i == 0) {
      judgement = mine;
    } else if (!(mine == judgement)) {
      throw InputError(saved[i].dir + " was compared with other thresholds or --op-list than " + saved[0].dir +
                       ": compare them alike to merge them");
    }
  }
  // A rank compared twice would count twice.
  std::map<int64_t, std::string> holder;
  for (const Saved& s : saved) {
    std::set<int64_t> mine;
    for (const Saved::Part& p : s.parts) mine.insert(p.rank);
    for (int64_t rank : mine) {
      auto [it, fresh] = holder.emplace(rank, s.dir);
      if (!fresh) throw InputError("rank " + std::to_string(rank) + " is in both " + it->second + " and " + s.dir);
    }
  }
  // Rank pairs in rank order, as one comparison of all ranks lists them.
  std::vector<Saved::Part*> order;
  for (Saved& s : saved) {
    for (Saved::Part& p : s.parts) order.push_back(&p);
  }
  std::stable_sort(order.begin(), order.end(), [](const Saved::Part* a, const Saved::Part* b) { return a->rank < b->rank; });
  CompareResult m;
  auto spill = std::make_shared<RecordSpill>();
  uint64_t offset = 0;
  for (Saved::Part* p : order) {
    p->merged_offset = offset;
    offset += p->count;
    spill->adopt(p->path, p->count, p->bytes);
    m.part_ranks.push_back(p->rank);
  }
  m.spill = spill;

  const RecordComparison* first_failing = nullptr;
  for (const Saved& s : saved) {
    const nlohmann::json& j = s.j;
    try {
      const std::string dir0 = j.at("dir0").get<std::string>(), dir1 = j.at("dir1").get<std::string>();
      if (m.dir0.empty()) {
        m.dir0 = dir0;
        m.dir1 = dir1;
      } else if (dir0 != m.dir0 || dir1 != m.dir1) {
        // Paths differ between machines; said, not refused.
        m.notes.push_back(s.dir + " compared " + dir0 + " and " + dir1 + ", " + saved.front().dir + " " + m.dir0 +
                          " and " + m.dir1);
      }
      const std::vector<size_t> positions = j.at("kept").get<std::vector<size_t>>();
      RecordSpill kept;
      kept.adopt(s.dir + "/rows/kept.rows", positions.size(), 0);
      size_t i = 0;
      kept.forEach([&](RecordComparison& r) { m.kept[s.mergedPosition(positions.at(i++))] = std::move(r); });
      for (size_t o : j.at("origins").get<std::vector<size_t>>()) m.origins.push_back(s.mergedPosition(o));
      if (!j.at("first_failing").is_null()) {
        const size_t f = s.mergedPosition(j.at("first_failing").get<size_t>());
        const RecordComparison& record = m.kept.at(f);
        if (!first_failing || comesFirst(record, *first_failing)) {
          first_failing = &record;
          m.first_failing = f;
        }
      }
      m.origins_not_kept += j.at("origins_not_kept").get<uint64_t>();
      m.tensors_compared += j.at("tensors_compared").get<uint64_t>();
      m.bytes_compared += j.at("bytes_compared").get<uint64_t>();
      m.pairs_reused += j.at("pairs_reused").get<uint64_t>();
      // Separate processes: the largest of their peaks, the sum of their times.
      m.peak_held_bytes = std::max(m.peak_held_bytes, j.at("peak_held_bytes").get<uint64_t>());
      m.seconds += j.at("seconds").get<double>();
      m.records0 += j.at("records0").get<uint64_t>();
      m.records1 += j.at("records1").get<uint64_t>();
      for (auto [key, to] : {std::pair{"problems", &m.problems}, std::pair{"notes", &m.notes},
                             std::pair{"recording_notes", &m.recording_notes}}) {
        for (const auto& line : j.at(key)) to->push_back(line.get<std::string>());
      }
      m.replay_stderr.lines += j.at("replay_stderr").at("lines").get<uint64_t>();
      for (const auto& line : j.at("replay_stderr").at("first")) {
        if (m.replay_stderr.first.size() < replay::Pool::kStderrKept) m.replay_stderr.first.push_back(line.get<std::string>());
      }
      for (const nlohmann::json& u : j.at("unmatched")) {
        if (m.unmatched.size() < CompareResult::kMaxUnmatched) {
          m.unmatched.push_back(unmatchedOf(u));
        } else {
          ++m.unmatched_not_listed[u.at("side").get<int>() == 0 ? 0 : 1];
        }
      }
      m.unmatched_not_listed[0] += j.at("unmatched_not_listed").at(0).get<uint64_t>();
      m.unmatched_not_listed[1] += j.at("unmatched_not_listed").at(1).get<uint64_t>();
      if (m.numerics0.empty()) m.numerics0 = j.at("numerics0");
      if (m.numerics1.empty()) m.numerics1 = j.at("numerics1");
      for (const nlohmann::json& d : j.at("settings_differ")) {
        addSettingDifference(m.settings_differ, {d.at("setting").get<std::string>(), d.at("dir0"), d.at("dir1")});
      }
    } catch (const nlohmann::json::exception& e) {
      throw InputError(s.dir + "/" + kSavedResultFile + ": not a saved comparison (" + e.what() + ")");
    } catch (const std::out_of_range&) {
      throw InputError(s.dir + ": its kept rows do not match " + kSavedResultFile);
    } catch (const InputError&) {
      throw;
    } catch (const std::runtime_error& e) {  // its rows cannot be read back
      throw InputError(s.dir + ": " + e.what());
    }
  }
  // As compare ends its own comparison (engine.cpp).
  sortOrigins(m);
  m.modules = summarizeModules(m);
  m.gradients = gradientMap(m);
  m.steps = summarizeSteps(m);
  return m;
}

}  // namespace acc::analyzer
