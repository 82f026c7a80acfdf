#include "analyzer/compare/windows.h"

#include <algorithm>
#include <limits>

#include "analyzer/compare/engine.h"

namespace acc::analyzer {

WindowAligner::WindowAligner(Source side0, Source side1, std::vector<std::string> op_list, Limits limits)
    : op_list_(std::move(op_list)), limits_(limits) {
  sides_[0].source = std::move(side0);
  sides_[1].source = std::move(side1);
  limits_.max_records = std::max<size_t>(limits_.max_records, 1);
}

// Reads until a window and the lag behind it are at hand, or the end.
void WindowAligner::fill(Side& s) {
  while (!s.end && s.pending < limits_.max_records + limits_.lag) {
    MetaItem item;
    if (!s.source(item)) {
      s.end = true;
      break;
    }
    s.read_to = item.ordinal + 1;
    const int64_t step = item.meta.step;
    s.steps[step].push_back(std::move(item));
    ++s.pending;
  }
}

uint64_t WindowAligner::decided(const Side& s) const {
  if (s.pending == 0) return s.end ? std::numeric_limits<uint64_t>::max() : s.read_to;
  uint64_t first = std::numeric_limits<uint64_t>::max();
  for (const auto& [step, items] : s.steps) {
    if (!items.empty()) first = std::min(first, items.front().ordinal);  // each step's are in file order
  }
  return first;
}

std::shared_ptr<AlignedWindow> WindowAligner::next() {
  fill(sides_[0]);
  fill(sides_[1]);
  if (sides_[0].pending == 0 && sides_[1].pending == 0) return nullptr;

  // The steps to take: whole steps, in order, while both sides have read
  // `lag` records past them (or their end) and they fit in a window; else
  // (a step longer than a window) a chunk of the first step.
  std::vector<int64_t> steps;
  for (const Side& s : sides_) {
    for (const auto& [step, items] : s.steps) steps.push_back(step);
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  std::vector<int64_t> take;
  size_t upto[2] = {0, 0};  // records of the steps up to the one considered
  for (int64_t step : steps) {
    size_t count[2];
    bool complete = true;
    for (int k = 0; k < 2; ++k) {
      auto it = sides_[k].steps.find(step);
      count[k] = it == sides_[k].steps.end() ? 0 : it->second.size();
      complete = complete && (sides_[k].end || sides_[k].pending - upto[k] - count[k] >= limits_.lag);
    }
    const bool fits = upto[0] + count[0] <= limits_.max_records && upto[1] + count[1] <= limits_.max_records;
    if (!complete || (!fits && !take.empty())) break;
    take.push_back(step);
    upto[0] += count[0];
    upto[1] += count[1];
    if (!fits) break;
  }
  // After fill(), a first step that is not complete on a side has at least
  // max_records there: it is taken in chunks.
  const bool chunk = take.empty();
  if (chunk) take.push_back(steps.front());

  auto w = std::make_shared<AlignedWindow>();
  std::vector<MetaItem> items[2];
  for (int k = 0; k < 2; ++k) {
    Side& s = sides_[k];
    for (int64_t step : take) {
      auto it = s.steps.find(step);
      if (it == s.steps.end()) continue;
      std::vector<MetaItem>& v = it->second;
      const size_t n = chunk ? std::min(v.size(), limits_.max_records) : v.size();
      std::move(v.begin(), v.begin() + static_cast<long>(n), std::back_inserter(items[k]));
      v.erase(v.begin(), v.begin() + static_cast<long>(n));
      s.pending -= n;
      if (v.empty()) s.steps.erase(it);
    }
    std::stable_sort(items[k].begin(), items[k].end(),
                     [](const MetaItem& a, const MetaItem& b) { return a.meta.index < b.meta.index; });
    std::vector<RecordMeta>& m = k == 0 ? w->m0 : w->m1;
    std::vector<uint64_t>& ordinals = k == 0 ? w->ordinal0 : w->ordinal1;
    m.reserve(items[k].size());
    ordinals.reserve(items[k].size());
    for (const MetaItem& item : items[k]) {
      m.push_back(item.meta);
      ordinals.push_back(item.ordinal);
    }
  }
  Alignment al = alignRank(w->m0, w->m1, limits_.max_cells);
  if (chunk && !al.pairs.empty()) {
    // What a chunk leaves unpaired after its last pair goes back to be
    // aligned with the next chunk, in file order, ahead of the rest; at
    // most half a chunk, so that each chunk settles at least half of its
    // records (runs that hardly pair stay linear).
    uint32_t last[2] = {al.pairs.back().i0, 0};
    for (const AlignedPair& p : al.pairs) last[1] = std::max(last[1], p.i1);
    std::vector<uint32_t>* only[2] = {&al.only0, &al.only1};
    for (int k = 0; k < 2; ++k) {
      std::vector<MetaItem> carried;
      auto after = [&](uint32_t i) { return i > last[k]; };
      for (uint32_t i : *only[k]) {
        if (after(i)) carried.push_back(items[k][i]);
      }
      if (carried.size() > items[k].size() / 2) continue;
      only[k]->erase(std::remove_if(only[k]->begin(), only[k]->end(), after), only[k]->end());
      if (carried.empty()) continue;
      std::sort(carried.begin(), carried.end(),
                [](const MetaItem& a, const MetaItem& b) { return a.ordinal < b.ordinal; });
      std::vector<MetaItem>& v = sides_[k].steps[take.front()];
      sides_[k].pending += carried.size();
      v.insert(v.begin(), std::make_move_iterator(carried.begin()), std::make_move_iterator(carried.end()));
    }
  }
  for (const AlignedPair& p : al.pairs) {
    const RecordMeta& m = w->m0[p.i0];
    if (opSelected(op_list_, m.op, m.name, m.grad_fn)) w->pairs.push_back(p);
  }
  for (uint32_t i : al.only0) {
    const RecordMeta& m = w->m0[i];
    if (opSelected(op_list_, m.op, m.name, m.grad_fn)) w->only0.push_back(i);
  }
  for (uint32_t j : al.only1) {
    const RecordMeta& m = w->m1[j];
    if (opSelected(op_list_, m.op, m.name, m.grad_fn)) w->only1.push_back(j);
  }
  w->notes = std::move(al.notes);
  w->first_pair = pairs_;
  pairs_ += w->pairs.size();
  w->decided[0] = decided(sides_[0]);
  w->decided[1] = decided(sides_[1]);
  return w;
}

}  // namespace acc::analyzer
