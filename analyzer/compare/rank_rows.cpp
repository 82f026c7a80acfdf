#include "analyzer/compare/rank_rows.h"
#include "analyzer/read/recording_notes.h"

#include <algorithm>

#include "analyzer/judge/allowed_precision.h"
#include "analyzer/compare/engine.h"
#include "analyzer/report/summary.h"

namespace acc::analyzer {

RankRows::RankRows(const RankRecording& a, const RankRecording& b, const StackTable& stacks0,
                   const Thresholds& thresholds, size_t replay_limit, RecordSpill::Part& part)
    : a_(a), b_(b), stacks0_(stacks0), thresholds_(thresholds), replay_limit_(replay_limit), part_(part),
      finds1_(referenceFinds(b.manifest)), judge_(thresholds) {}

void RankRows::addWindow(std::shared_ptr<const AlignedWindow> window) {
  std::lock_guard<std::mutex> lock(mutex_);
  windows_.push_back(std::move(window));
}

uint64_t RankRows::pairsAdded() const {
  return windows_.empty() ? next_ : windows_.back()->first_pair + windows_.back()->pairs.size();
}

void RankRows::deliver(uint64_t pair, std::vector<TensorPair>&& tensors) {
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
  for (const uint64_t end = pairsAdded(); next_ < end; ++next_) {
    auto it = waiting_.find(next_);
    emit(next_, it != waiting_.end() ? std::move(it->second) : std::vector<TensorPair>());
    if (it != waiting_.end()) waiting_.erase(it);
  }
  windows_.clear();
  part_.close();
}

void RankRows::emit(uint64_t k, std::vector<TensorPair>&& tensors) {
  // Windows come in order and pairs are emitted in order: the front one
  // holds `k` once those before it are done.
  while (!windows_.empty() && windows_.front()->first_pair + windows_.front()->pairs.size() <= k) {
    windows_.pop_front();
  }
  const AlignedWindow& w = *windows_.front();
  const AlignedPair& p = w.pairs[k - w.first_pair];
  const RecordMeta& m0 = w.m0[p.i0];
  const RecordMeta& m1 = w.m1[p.i1];
  RecordComparison r = describePair(m0, m1, a_.rank);
  r.tensors = std::move(tensors);
  judgeAtAllowedPrecision(r, m0, a_.manifest, m1, b_.manifest, thresholds_);
  judge_.judge(r);
  if (r.verdict != Verdict::Pass || r.origin) {
    if (m0.pass == format::Pass::Backward) forwardStacksOf(w, m0.step);
    attachStack(r, m0);
  }
  attachRerecord(r, w, p);
  for (const TensorPair& t : r.tensors) tensors_compared += t.metrics.compared;
  bool keep = false;
  const bool captured = !finds1_.empty() && finds1_.count(m1.name.str()) != 0;
  if (r.origin) {
    origins.push_back(k);
    if (!failsOnStatistics(r) || captured) {
      if (candidates.size() < replay_limit_) {
        candidates.push_back(k);
        keep = true;
      } else {
        ++candidates_skipped;
      }
    }
    keep = keep || origins.size() <= kMaxKeptOrigins;
    if (!keep) ++origins_not_kept;
  } else if (r.screened || (captured && r.replay.state == ReplayState::MayAmplify)) {
    // Only replay can make it an origin: beyond the limit it stays none.
    if (candidates.size() < replay_limit_) {
      candidates.push_back(k);
      screened.push_back(k);
      keep = true;
    } else {
      ++screened_skipped;
    }
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
    auto it = forward_stack_.find(m.forward_name);
    if (it != forward_stack_.end() && stack_step_ == m.step) id = it->second;
  }
  if (id == 0) return;
  r.stack0 = stacks0_.frames(id);
  if (!r.stack0.empty()) r.location = userLocation(r.stack0);
}

// The stacks of the forward records of `step`, by name, gathered once per
// window and step (a table of every step's would grow with the run); a step
// longer than a window adds each window's to those of its earlier ones.
void RankRows::forwardStacksOf(const AlignedWindow& w, int64_t step) {
  if (step == stack_step_ && w.first_pair == stacks_of_) return;
  if (step != stack_step_) forward_stack_.clear();
  stack_step_ = step;
  stacks_of_ = w.first_pair;
  for (const RecordMeta& m : w.m0) {
    if (m.step == step && m.pass == format::Pass::Forward && m.stack_id) forward_stack_[m.name] = m.stack_id;
  }
}

// Level-1 candidates get the environment that re-records just their region
// at level 2 in both runs: their step, and the records from kMargin before
// to kMargin after them (a backward record's forward op included: replay
// needs what autograd saved), names taken from DIR1. The region is looked
// for within the pair's window.
void RankRows::attachRerecord(RecordComparison& r, const AlignedWindow& w, const AlignedPair& p) const {
  constexpr size_t kMargin = 3;
  if (!failsOnStatistics(r) || !(r.origin || r.replay.state == ReplayState::MayAmplify)) return;
  const std::vector<RecordMeta>& metas = w.m1;
  size_t first = p.i1, last = p.i1;
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
