// Alignment a window at a time (analyzer/compare/windows.h): with windows far
// smaller than a step, the pairs are those of aligning the whole run at once,
// stragglers join their step, and every window says truly how far each
// side's records are settled (what pass 2's readers rely on).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "analyzer/compare/windows.h"

namespace acc::analyzer {
namespace {

// One step's records: ops named as the recorder names them, indices from
// `first_index` on.
std::vector<RecordMeta> step(const std::vector<std::string>& ops, int64_t number, uint64_t first_index) {
  std::vector<RecordMeta> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    format::OpRecord r;
    r.op = "aten::" + ops[i];
    r.index = first_index + i;
    r.step = number;
    r.name = r.op + "." + std::to_string(i) + ".fwd";
    format::Tensor t;
    t.role = format::Role::Input;
    t.shape = {4};
    r.tensors.push_back(t);
    out.push_back(recordMeta(r));
  }
  return out;
}

std::vector<std::string> cycle(size_t n, size_t shift = 0) {
  const char* ops[] = {"linear", "gelu", "add", "layer_norm", "mul"};
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(ops[(i + shift) % 5]);
  return out;
}

// A run: steps one after another, indices running on.
std::vector<RecordMeta> run(const std::vector<std::vector<std::string>>& steps) {
  std::vector<RecordMeta> out;
  for (size_t s = 0; s < steps.size(); ++s) {
    std::vector<RecordMeta> one = step(steps[s], static_cast<int64_t>(s), out.size());
    out.insert(out.end(), one.begin(), one.end());
  }
  return out;
}

// The records in the given (file) order as a source, ordinals counted.
WindowAligner::Source source(const std::vector<RecordMeta>& file_order) {
  auto at = std::make_shared<size_t>(0);
  return [file_order, at](MetaItem& item) {
    if (*at == file_order.size()) return false;
    item.meta = file_order[*at];
    item.ordinal = (*at)++;
    return true;
  };
}

struct Collected {
  std::vector<std::pair<std::string, std::string>> pairs;  // (step.name, step.name) in window order
  std::multiset<std::string> only0, only1;
  size_t windows = 0;
};

std::string key(const RecordMeta& m) { return std::to_string(m.step) + ":" + m.name.str(); }

// Runs the aligner to the end, checking each window's promises on the way
// (`selected`: every record is paired or unmatched, no --op list).
Collected collect(WindowAligner& aligner, const std::vector<RecordMeta>& file0, const std::vector<RecordMeta>& file1,
                  bool selected = true) {
  Collected c;
  std::set<uint64_t> seen[2];  // ordinals settled by the windows so far
  uint64_t next_pair = 0;
  while (auto w = aligner.next()) {
    ++c.windows;
    EXPECT_EQ(w->first_pair, next_pair);
    next_pair += w->pairs.size();
    EXPECT_EQ(w->m0.size(), w->ordinal0.size());
    EXPECT_EQ(w->m1.size(), w->ordinal1.size());
    for (const AlignedPair& p : w->pairs) c.pairs.push_back({key(w->m0[p.i0]), key(w->m1[p.i1])});
    for (uint32_t i : w->only0) c.only0.insert(key(w->m0[i]));
    for (uint32_t j : w->only1) c.only1.insert(key(w->m1[j]));
    // A chunk's records carried into the next window are listed in both:
    // they count as settled only once they are paired or unmatched.
    for (const AlignedPair& p : w->pairs) {
      seen[0].insert(w->ordinal0[p.i0]);
      seen[1].insert(w->ordinal1[p.i1]);
    }
    for (uint32_t i : w->only0) seen[0].insert(w->ordinal0[i]);
    for (uint32_t j : w->only1) seen[1].insert(w->ordinal1[j]);
    for (int s = 0; s < 2 && selected; ++s) {
      const size_t total = s == 0 ? file0.size() : file1.size();
      for (uint64_t o = 0; o < std::min<uint64_t>(w->decided[s], total); ++o) {
        EXPECT_TRUE(seen[s].count(o)) << "side " << s << " ordinal " << o << " said settled but in no window";
      }
    }
  }
  if (selected) {
    EXPECT_EQ(seen[0].size(), file0.size());
    EXPECT_EQ(seen[1].size(), file1.size());
  }
  return c;
}

Collected whole(const std::vector<RecordMeta>& m0, const std::vector<RecordMeta>& m1) {
  Collected c;
  Alignment al = alignRank(m0, m1);
  for (const AlignedPair& p : al.pairs) c.pairs.push_back({key(m0[p.i0]), key(m1[p.i1])});
  for (uint32_t i : al.only0) c.only0.insert(key(m0[i]));
  for (uint32_t j : al.only1) c.only1.insert(key(m1[j]));
  return c;
}

TEST(CompareWindows, StepsLongerThanAWindowAlignAsAWhole) {
  // Three steps of 40 records; in DIR1 an extra op sits near the end of the
  // first 16-record chunk of step 1 and step 2 misses one near its start.
  std::vector<std::string> extra = cycle(40), missing = cycle(40);
  extra.insert(extra.begin() + 14, "clone");
  missing.erase(missing.begin() + 3);
  const auto m0 = run({cycle(40), cycle(40), cycle(40)});
  const auto m1 = run({cycle(40), extra, missing});
  WindowAligner aligner(source(m0), source(m1), {}, {16, 4, size_t(64) << 20});
  Collected c = collect(aligner, m0, m1);
  Collected w = whole(m0, m1);
  EXPECT_EQ(c.pairs, w.pairs);
  EXPECT_EQ(c.only0, w.only0);
  EXPECT_EQ(c.only1, w.only1);
  EXPECT_EQ(c.pairs.size(), 119u);
  EXPECT_EQ(c.only1, (std::multiset<std::string>{"1:aten::clone.14.fwd"}));
  EXPECT_EQ(c.only0.size(), 1u);
  EXPECT_GT(c.windows, 6u);  // chunks, not whole steps
}

TEST(CompareWindows, ShortStepsShareAWindow) {
  std::vector<std::vector<std::string>> steps(50, cycle(6));
  const auto m0 = run(steps), m1 = run(steps);
  WindowAligner aligner(source(m0), source(m1), {}, {100, 8, size_t(64) << 20});
  Collected c = collect(aligner, m0, m1);
  EXPECT_EQ(c.pairs.size(), 300u);
  EXPECT_TRUE(c.only0.empty() && c.only1.empty());
  EXPECT_LE(c.windows, 5u);  // about 100 records a window, not one step each
  for (const auto& [a, b] : c.pairs) EXPECT_EQ(a, b);
}

TEST(CompareWindows, RecordsWrittenAfterALaterStepStartedJoinTheirStep) {
  // DIR0's file holds the last record of step 0 after two of step 1 (an op
  // that finished late): within the lag, it is still aligned with step 0.
  const auto m0 = run({cycle(10), cycle(10), cycle(10)});
  const auto m1 = m0;
  std::vector<RecordMeta> file0 = m0;
  std::rotate(file0.begin() + 9, file0.begin() + 10, file0.begin() + 12);
  ASSERT_EQ(file0[11].step, 0);
  WindowAligner aligner(source(file0), source(m1), {}, {10, 4, size_t(64) << 20});
  Collected c = collect(aligner, file0, m1);
  EXPECT_EQ(c.pairs.size(), 30u);
  EXPECT_TRUE(c.only0.empty() && c.only1.empty());
  for (const auto& [a, b] : c.pairs) EXPECT_EQ(a, b);
}

TEST(CompareWindows, AStepOfOneRunOnlyIsUnmatched) {
  const auto m0 = run({cycle(5), cycle(5), cycle(5)});
  auto m1 = run({cycle(5), cycle(5), cycle(5)});
  m1.erase(std::remove_if(m1.begin(), m1.end(), [](const RecordMeta& m) { return m.step == 1; }), m1.end());
  WindowAligner aligner(source(m0), source(m1), {}, {4, 2, size_t(64) << 20});
  Collected c = collect(aligner, m0, m1);
  EXPECT_EQ(c.pairs.size(), 10u);
  EXPECT_EQ(c.only0.size(), 5u);
  for (const std::string& k : c.only0) EXPECT_EQ(k.substr(0, 2), "1:");
  EXPECT_TRUE(c.only1.empty());
}

TEST(CompareWindows, OpListSelectsPairsAndUnmatchedRecords) {
  const auto m0 = run({cycle(10)});
  auto m1 = run({cycle(10)});
  m1.pop_back();  // a mul only in DIR0
  WindowAligner aligner(source(m0), source(m1), {"GELU", "mul"});
  Collected c = collect(aligner, m0, m1, false);
  // gelu 1 and 6, mul 4 paired; mul 9 only in DIR0.
  EXPECT_EQ(c.pairs.size(), 3u);
  EXPECT_EQ(c.only0, (std::multiset<std::string>{"0:aten::mul.9.fwd"}));
}

}  // namespace
}  // namespace acc::analyzer
