#include "analyzer/judge/confirm.h"

#include <map>
#include <set>

#include "analyzer/judge/origins.h"
#include "analyzer/judge/replay_inputs.h"
#include "analyzer/judge/replay_verdict.h"
#include "analyzer/read/recording_notes.h"

namespace acc::analyzer {
namespace {

std::map<uint64_t, ReplayItem> itemsOf(const RankRecording& rank, const std::set<uint64_t>& wanted) {
  std::map<uint64_t, ReplayItem> items;
  forEachReplayItem(
      rank, [&](const format::OpRecord& m) { return wanted.count(m.index) != 0; },
      [&](ReplayItem&& item) { items[item.index] = std::move(item); });
  return items;
}

}  // namespace

void confirmByReplay(std::vector<RecordComparison>& records, const RankRecording& rank0, const RankRecording& rank1,
                     const Thresholds& thresholds, replay::Pool& pool, size_t limit, std::vector<std::string>& notes) {
  std::vector<size_t> candidates;
  size_t skipped = 0;
  // Candidates judged on statistics are replayed only where DIR1 holds
  // their values anyway: ACC_REFERENCE's finds (compare/rank_rows.h).
  const bool has_finds = !referenceFinds(rank1.manifest).empty();
  for (size_t k = 0; k < records.size(); ++k) {
    const bool candidate = records[k].origin || records[k].screened ||
                           (has_finds && records[k].replay.state == ReplayState::MayAmplify);
    if (!candidate || (failsOnStatistics(records[k]) && !has_finds)) continue;
    if (candidates.size() < limit) candidates.push_back(k);
    else ++skipped;
  }
  if (skipped) {
    notes.push_back("rank " + std::to_string(rank0.rank) + ": " + std::to_string(skipped) +
                    " candidate origin(s) beyond --replay-limit " + std::to_string(limit) +
                    " were not replayed (judged by the ratio rule)");
  }
  if (candidates.empty()) return;
  std::set<uint64_t> want0, want1;
  for (size_t k : candidates) {
    want0.insert(records[k].index0);
    want1.insert(records[k].index1);
  }
  std::map<uint64_t, ReplayItem> items0 = itemsOf(rank0, want0), items1 = itemsOf(rank1, want1);
  // Requests 2k (DIR0) and 2k+1 (DIR1) for candidate k.
  std::vector<replay::Outcome> outcomes(candidates.size() * 2);
  size_t next = 0;
  auto missing = [](const std::string& why) {
    replay::Outcome o;
    o.status = replay::Status::NotReplayable;
    o.reason = why;
    return o;
  };
  pool.run(
      [&]() -> std::optional<std::pair<uint64_t, replay::Request>> {
        while (next < outcomes.size()) {
          const size_t id = next++;
          const RecordComparison& r = records[candidates[id / 2]];
          auto& items = id % 2 ? items1 : items0;
          auto it = items.find(id % 2 ? r.index1 : r.index0);
          if (it == items.end()) {
            outcomes[id] = missing("the record could not be read again");
          } else if (!it->second.not_replayable.empty()) {
            outcomes[id] = missing(it->second.not_replayable);
          } else {
            return std::make_pair(uint64_t(id), std::move(it->second.request));
          }
        }
        return std::nullopt;
      },
      [&](uint64_t id, replay::Outcome&& o) { outcomes[id] = std::move(o); });
  for (size_t c = 0; c < candidates.size(); ++c) {
    RecordComparison& r = records[candidates[c]];
    auto a = items0.find(r.index0), b = items1.find(r.index1);
    ReplayItem unreadable;
    unreadable.not_replayable = "the record could not be read again";
    const bool may_amplify = r.replay.state == ReplayState::MayAmplify;
    judgeByReplay(r, a == items0.end() ? unreadable : a->second, outcomes[2 * c],
                  b == items1.end() ? unreadable : b->second, outcomes[2 * c + 1], thresholds);
    // What statistics could not tell, replay did: its kernel is wrong.
    if (may_amplify && r.replay.state == ReplayState::Confirmed) r.origin = true;
    if (may_amplify && r.replay.state == ReplayState::NotReplayable) r.replay.state = ReplayState::MayAmplify;
  }
}

}  // namespace acc::analyzer
