#include "analyzer/read/recording.h"

#include "analyzer/read/json_fields.h"

#include "analyzer/msprobe/dump_dir.h"
#include "analyzer/msprobe/import.h"

#include <cstdint>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

#include "format/bytes.h"
#include "format/delta_map.h"
#include "env/config.h"
#include "format/frame.h"

namespace acc::analyzer {
namespace fs = std::filesystem;
namespace {

using env::kRecordsFile;

RankRecording openRank(const fs::path& dir) {
  RankRecording r;
  r.dir = dir.string();
  r.manifest = nlohmann::json::object();
  std::ifstream in(dir / "manifest.json");
  if (in) {
    try {
      in >> r.manifest;
    } catch (const std::exception& e) {
      throw InputError((dir / "manifest.json").string() + ": not valid JSON (" + e.what() + ")");
    }
    if (!r.manifest.is_object()) {
      throw InputError((dir / "manifest.json").string() + ": not a JSON object (a manifest is one object of fields)");
    }
  }
  if (r.manifest.contains("rank") && r.manifest["rank"].is_number_integer()) {
    r.rank = r.manifest["rank"].get<int64_t>();
  } else {
    std::string name = dir.filename().string();
    if (name.rfind("rank", 0) == 0) r.rank = std::atoll(name.c_str() + 4);
  }
  return r;
}

}  // namespace

std::vector<RankRecording> openRecording(const std::string& path) {
  fs::path p(path);
  std::error_code ec;
  if (!fs::exists(p, ec)) throw InputError(path + ": no such file or directory");
  if (fs::exists(p / kRecordsFile, ec)) return {openRank(p)};
  if (msprobe::isDump(path)) return openRecording(msprobe::importedCopy(path));
  if (!fs::is_directory(p, ec)) throw InputError(path + ": not a directory (give the recording's directory)");
  std::vector<RankRecording> ranks;
  for (const auto& entry : fs::directory_iterator(p, ec)) {
    if (entry.is_directory() && fs::exists(entry.path() / kRecordsFile)) ranks.push_back(openRank(entry.path()));
  }
  if (ranks.empty()) {
    throw InputError(path + ": no recording here (expected " + kRecordsFile +
                     " in it or in its rank*/ subdirectories)");
  }
  std::sort(ranks.begin(), ranks.end(), [](const RankRecording& a, const RankRecording& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.dir < b.dir;
  });
  return ranks;
}

std::string ReadDamage::describe(const std::string& file) const {
  std::string out = file + ":";
  if (truncated_bytes) out += " ends in an incomplete frame (" + std::to_string(truncated_bytes) + " bytes ignored; the recording process did not finish)";
  if (corrupt_frames) out += " " + std::to_string(corrupt_frames) + " corrupt frame(s) skipped";
  if (corrupt_records) out += " " + std::to_string(corrupt_records) + " corrupt record(s) skipped";
  if (missing_data) out += " " + std::to_string(missing_data) + " tensor(s) without their data (compared on statistics)";
  if (missing_contents) out += " " + std::to_string(missing_contents) + " tensor(s) referring to values whose record was lost (metadata only)";
  return out + "; the readable records are used";
}

std::vector<char> inflateOnThisThread(int fd, const std::vector<format::DeferredFrame>& frames) {
  thread_local format::DataFrameInflater inflater;
  std::vector<char> failed(frames.size(), 0);
  for (size_t i = 0; i < frames.size(); ++i) failed[i] = !inflater.inflate(fd, frames[i].frame, frames[i].out);
  return failed;
}

namespace {

// A chain of deltas no recorder writes (it keeps them short): a damaged or
// hostile file, read no further.
constexpr int kMaxDeltaChain = 64;

// Format v8: gives the tensors whose bytes were recorded XOR'ed with an
// earlier content (delta_base) their values back (those restored lately
// were taken from memory instead of being read: restoredLately). The
// values of the base are most often in the same record (the input an
// in-place op overwrote, loaded just before) or among those restored
// lately (the op before it in the chain); otherwise the base's stored
// bytes, and its own base's, are read from the stream behind us down to
// values the chain rests on, and undone from there up (a v9 link XORs the
// values below it mapped: format/delta_map.h). A tensor whose base cannot
// be read loses its data.
void undoDeltas(format::OpRecord& r, const std::vector<char>& bad, format::FrameReader& file, ContentTable& contents,
                ReadDamage& damage) {
  RecentValues& recent = contents.recentValues();
  struct Link {
    std::string bytes;  // stored
    format::Dtype dtype = format::Dtype::Unknown;
    format::DeltaMap map = format::DeltaMap::None;
    double scalar = 0;
  };
  std::vector<Link> links;  // between the tensor and the values below, nearest first
  std::string root;         // values stored as they are, at the chain's end
  for (size_t k = 0; k < r.tensors.size(); ++k) {
    format::Tensor& t = r.tensors[k];
    if (t.delta_base == 0 || !t.has_data || !t.data_in_stream || bad[k]) continue;
    const size_t size = t.data.size();
    const std::string* below = nullptr;  // the base's values
    for (size_t j = 0; j < k && below == nullptr; ++j) {
      const format::Tensor& base = r.tensors[j];
      if (base.content == t.delta_base && base.has_data && !bad[j] && base.data.size() == size) below = &base.data;
    }
    size_t depth = 0;
    uint64_t link = t.delta_base;
    while (below == nullptr && depth < kMaxDeltaChain) {
      if (const std::string* known = recent.find(link); known != nullptr && known->size() == size) {
        below = known;
        break;
      }
      ContentTable::DataPlace place;
      if (!contents.dataPlace(link, place) || place.size != size) break;
      if (place.delta_base != 0 && depth == links.size()) links.emplace_back();
      std::string& bytes = place.delta_base == 0 ? root : links[depth].bytes;
      bytes.resize(place.size);
      if (place.size != 0 && !file.readData(place.offset, place.size, bytes.data())) break;
      if (place.delta_base == 0) {
        below = &root;
        break;
      }
      links[depth].dtype = place.dtype;
      links[depth].map = place.delta_map;
      links[depth].scalar = place.delta_scalar;
      ++depth;
      link = place.delta_base;
    }
    if (below != nullptr) {
      for (size_t i = depth; i-- > 0;) {
        Link& l = links[i];
        format::xorMapped(below->data(), l.bytes.data(), l.bytes.data(), size, l.dtype, l.map, l.scalar);
        below = &l.bytes;
      }
      format::xorMapped(below->data(), t.data.data(), t.data.data(), size, t.dtype, t.delta_map, t.delta_scalar);
    }
    t.delta_base = 0;
    t.delta_map = format::DeltaMap::None;
    if (below != nullptr) {
      recent.put(t.content, t.data);
      continue;
    }
    t.has_data = false;  // compared on its statistics
    t.data.clear();
    t.data.shrink_to_fit();
    ++damage.missing_data;
  }
}

// A delta content this reader restored lately (format v8): its values
// come from memory, without reading its stored bytes or its chain.
bool restoredLately(format::Tensor& t, ContentTable& contents) {
  if (t.delta_base == 0) return false;
  const std::string* known = contents.recentValues().find(t.content);
  if (known == nullptr || known->size() != t.data_size) return false;
  t.data = *known;
  t.delta_base = 0;
  t.delta_map = format::DeltaMap::None;
  return true;
}

}  // namespace

format::OpRecord RawRecord::decodeOp(bool with_data, const FrameInflater& inflate) const {
  format::OpRecord r = format::decodeOp(body, with_data, data_offset_);
  const uint64_t unknown = contents_.resolve(r);
  if (!decoded_) damage_.missing_contents += unknown;
  decoded_ = true;
  if (!with_data) return r;
  std::vector<format::DeferredFrame> whole;
  std::vector<size_t> owner;  // the tensor of each whole frame
  std::vector<char> bad(r.tensors.size(), 0);
  for (size_t k = 0; k < r.tensors.size(); ++k) {
    format::Tensor& t = r.tensors[k];
    if (!t.has_data || !t.data_in_stream || t.data_size == 0) continue;  // v1: loaded inline
    if (restoredLately(t, contents_)) continue;
    t.data.resize(t.data_size);
    const size_t before = whole.size();
    if (!file_.readDataDeferred(t.data_offset, t.data_size, t.data.data(), whole)) {
      bad[k] = 1;
      whole.resize(before);
    }
    owner.resize(whole.size(), k);
  }
  const std::vector<char> failed = (inflate ? inflate : inflateOnThisThread)(file_.fd(), whole);
  for (size_t i = 0; i < whole.size(); ++i) {
    if (!failed[i]) continue;
    file_.markCorruptDataFrame(whole[i].index);
    bad[owner[i]] = 1;
  }
  for (size_t k = 0; k < r.tensors.size(); ++k) {
    if (!bad[k]) continue;
    format::Tensor& t = r.tensors[k];
    t.has_data = false;  // compared on its statistics
    t.data.clear();
    t.data.shrink_to_fit();
    ++damage_.missing_data;
  }
  undoDeltas(r, bad, file_, contents_, damage_);
  return r;
}

void RawRecord::loadData(format::OpRecord& earlier) const {
  std::vector<char> bad(earlier.tensors.size(), 0);
  for (size_t k = 0; k < earlier.tensors.size(); ++k) {
    format::Tensor& t = earlier.tensors[k];
    if (!t.has_data || !t.data_in_stream || !t.data.empty()) {
      bad[k] = t.delta_base != 0;  // its bytes, if any, are not this load's
      continue;
    }
    if (restoredLately(t, contents_)) continue;
    t.data.resize(t.data_size);
    if (t.data_size != 0 && !file_.readData(t.data_offset, t.data_size, t.data.data())) {
      t.has_data = false;
      t.data.clear();
      ++damage_.missing_data;
      bad[k] = 1;
    }
  }
  undoDeltas(earlier, bad, file_, contents_, damage_);
}

ReadDamage forEachRecord(const std::string& file, const std::function<void(const RawRecord&)>& visit) {
  std::unique_ptr<format::FrameReader> opened;
  try {
    opened = std::make_unique<format::FrameReader>(file);
  } catch (const format::FormatError& e) {
    throw InputError(e.what());
  }
  format::FrameReader& reader = *opened;
  ReadDamage damage;
  ContentTable contents;
  std::string payload;
  while (reader.next(payload)) {
    format::RecordCursor cursor(payload);
    format::RecordKind kind;
    std::string_view body;
    try {
      while (cursor.next(kind, body)) {
        try {
          RawRecord record(kind, body, cursor.dataOffset(), reader, damage, contents);
          visit(record);
          // Later records may refer to the contents of one the visitor skipped.
          if (kind == format::RecordKind::Op && !record.decoded() && reader.version() >= 4) record.decodeOp(false);
        } catch (const format::FormatError&) {
          ++damage.corrupt_records;
        }
      }
    } catch (const format::FormatError&) {
      ++damage.corrupt_records;  // the rest of this frame cannot be delimited
    }
  }
  damage.corrupt_frames = reader.corruptFrames() + reader.corruptDataFrames();
  damage.truncated_bytes = reader.truncatedBytes();
  return damage;
}

std::string recordsFile(const RankRecording& rank) { return (fs::path(rank.dir) / kRecordsFile).string(); }

ReadDamage readRecords(const RankRecording& rank, const ReadOptions& options,
                       const std::function<void(format::OpRecord&&)>& on_op,
                       std::map<uint64_t, format::StackRecord>& stacks) {
  return forEachRecord(recordsFile(rank),
                       [&](const RawRecord& record) {
                         if (record.kind == format::RecordKind::Op) {
                           on_op(record.decodeOp(options.with_data));
                         } else if (record.kind == format::RecordKind::Stack) {
                           format::StackRecord s = format::decodeStack(record.body);
                           stacks[s.id] = std::move(s);
                         }
                       });
}

uint64_t expectedRecords(const RankRecording& rank) {
  return countField(objectField(rank.manifest, "counts"), "written");
}

std::vector<format::OpRecord> loadSorted(const RankRecording& rank,
                                         std::map<uint64_t, format::StackRecord>& stacks,
                                         ReadDamage& damage) {
  std::vector<format::OpRecord> records;
  damage = readRecords(rank, ReadOptions{}, [&](format::OpRecord&& r) { records.push_back(std::move(r)); }, stacks);
  std::stable_sort(records.begin(), records.end(),
                   [](const format::OpRecord& a, const format::OpRecord& b) { return a.index < b.index; });
  return records;
}

}  // namespace acc::analyzer
