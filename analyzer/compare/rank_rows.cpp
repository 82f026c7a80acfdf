#include "analyzer/compare/rank_rows.h"

#include <algorithm>
#include <iterator>

#include "analyzer/compare/allowed_precision.h"
#include "analyzer/compare/engine.h"
#include "analyzer/compare/summary.h"

namespace acc::analyzer {

RankRows::RankRows(const ScannedRank& a, const ScannedRank& b, const std::vector<AlignedPair>& pairs,
                   const Thresholds& thresholds, size_t replay_limit, RecordSpill::Part& part)
    : a_(a), b_(b), pairs_(pairs), thresholds_(thresholds), replay_limit_(replay_limit), part_(part),
      judge_(thresholds) {}

void RankRows::deliver(size_t pair, std::vector<TensorPair>&& tensors) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (pair != next_) {
    waiting_.emplace(pair, std::move(tensors));
    return;
  }
  emit(next_++, std::move(tensors));
  for (auto it = waiting_.begin(); it != waiting_.end() && it->first == next_; it = waiting_.erase(it)) {
    emit(next_++, std::move(it->second));
  }
}

void RankRows::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (; next_ < pairs_.size(); ++next_) {
    auto it = waiting_.find(next_);
    emit(next_, it != waiting_.end() ? std::move(it->second) : std::vector<TensorPair>());
    if (it != waiting_.end()) waiting_.erase(it);
  }
  part_.close();
}

void RankRows::emit(size_t k, std::vector<TensorPair>&& tensors) {
  const RecordMeta& m0 = a_.records[pairs_[k].i0];
  const RecordMeta& m1 = b_.records[pairs_[k].i1];
  RecordComparison r = describePair(m0, m1, a_.rank.rank);
  r.tensors = std::move(tensors);
  judgeAtAllowedPrecision(r, m0, a_.rank.manifest, m1, b_.rank.manifest, thresholds_);
  judge_.judge(r);
  if (r.verdict != Verdict::Pass || r.origin) attachStack(r, m0);
  attachRerecord(r, k);
  for (const TensorPair& p : r.tensors) tensors_compared += p.metrics.compared;
  bool keep = false;
  if (r.origin) {
    origins.push_back(k);
    if (!failsOnStatistics(r)) {
      if (candidates.size() < replay_limit_) {
        candidates.push_back(k);
        keep = true;
      } else {
        ++candidates_skipped;
      }
    }
    keep = keep || origins.size() <= kMaxKeptOrigins;
    if (!keep) ++origins_not_kept;
  }
  // Pairs come in execution order: the first failing one is the first met.
  if (first_failing == SIZE_MAX && failsFirstCandidate(r)) {
    first_failing = k;
    keep = true;
  }
  part_.append(r);
  if (keep) kept[k] = std::move(r);
}

// Stacks of the records that do not pass (backward records: their forward
// op's stack when known: where the user called the op).
void RankRows::attachStack(RecordComparison& r, const RecordMeta& m) {
  uint64_t id = m.stack_id;
  if (m.pass == format::Pass::Backward) {
    // The forward call site names the op; a backward stack only shows
    // loss.backward().
    if (m.step != stack_step_) forwardStacksOf(m);
    auto it = forward_stack_.find(m.forward_name);
    if (it != forward_stack_.end()) id = it->second;
  }
  auto stack = a_.stacks.find(id);
  if (id == 0 || stack == a_.stacks.end()) return;
  for (const format::StackFrame& f : stack->second.frames) r.stack0.push_back(f.text);
  r.location = userLocation(r.stack0);
}

// The stacks of the forward records of `m`'s step, by name: pairs come in
// execution order, so each step's are gathered once (a table of every
// step's would grow with the run).
void RankRows::forwardStacksOf(const RecordMeta& m) {
  const std::vector<RecordMeta>& metas = a_.records;
  forward_stack_.clear();
  stack_step_ = m.step;
  auto at = std::lower_bound(metas.begin(), metas.end(), m.index,
                             [](const RecordMeta& x, uint64_t index) { return x.index < index; });
  auto first = at;
  while (first != metas.begin() && std::prev(first)->step == m.step) --first;
  for (auto it = first; it != metas.end() && it->step == m.step; ++it) {
    if (it->pass == format::Pass::Forward && it->stack_id) forward_stack_[it->name] = it->stack_id;
  }
}

// Level-1 candidates get the environment that re-records just their region
// at level 2 in both runs: their step, and the records from kMargin before
// to kMargin after them (a backward record's forward op included: replay
// needs what autograd saved), names taken from DIR1.
void RankRows::attachRerecord(RecordComparison& r, size_t k) const {
  constexpr size_t kMargin = 3;
  if (!failsOnStatistics(r) || !(r.origin || r.replay.state == ReplayState::MayAmplify)) return;
  const std::vector<RecordMeta>& metas = b_.records;
  size_t first = pairs_[k].i1, last = pairs_[k].i1;
  const RecordMeta& m = metas[last];
  if (m.pass == format::Pass::Backward) {
    for (size_t j = last; j-- > 0 && metas[j].step == m.step;) {
      if (metas[j].name == m.forward_name) first = j;
    }
  }
  size_t from = first, to = last + 1;  // [from, to): names; `to` may be past the step
  for (size_t n = 0; n < kMargin && from > 0 && metas[from - 1].step == m.step; ++n) --from;
  for (size_t n = 0; n < kMargin && to < metas.size() && metas[to].step == m.step; ++n) ++to;
  const std::string end = to < metas.size() && metas[to].step == m.step ? metas[to].name.str() : "";
  r.rerecord = "ACC_LEVEL=2 ACC_STEPS=" + std::to_string(m.step) + " ACC_OP_RANGE=" + metas[from].name.str() + "," + end;
}

}  // namespace acc::analyzer
