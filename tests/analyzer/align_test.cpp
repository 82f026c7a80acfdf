// Alignment of op sequences that differ (analyzer/compare/align).
#include <cstdint>
#include <gtest/gtest.h>

#include "analyzer/compare/align.h"

namespace acc::analyzer {
namespace {

// Records from a compact description: "op" or "op:shape", numbered per step
// as the recorder names them ({op}.{n}.fwd with n counting every op).
std::vector<RecordMeta> seq(const std::vector<std::string>& ops, int64_t step = 0, uint64_t first_index = 0,
                            uint64_t first_n = 0) {
  std::vector<RecordMeta> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    format::OpRecord r;
    std::string op = ops[i];
    int64_t dim = 4;
    if (size_t colon = op.find(':'); colon != std::string::npos) {
      dim = std::stoll(op.substr(colon + 1));
      op = op.substr(0, colon);
    }
    r.op = "aten::" + op;
    r.index = first_index + i;
    r.step = step;
    r.name = r.op + "." + std::to_string(first_n + i) + ".fwd";
    format::Tensor t;
    t.role = format::Role::Input;
    t.shape = {dim};
    r.tensors.push_back(t);
    out.push_back(recordMeta(r));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> named(const Alignment& a, const std::vector<RecordMeta>& m0,
                                                       const std::vector<RecordMeta>& m1) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const AlignedPair& p : a.pairs) out.push_back({m0[p.i0].name, m1[p.i1].name});
  return out;
}

TEST(CompareAlign, IdenticalSequencesPairByName) {
  auto a = seq({"linear", "gelu", "linear"}), b = seq({"linear", "gelu", "linear"});
  Alignment al = alignRank(a, b);
  ASSERT_EQ(al.pairs.size(), 3u);
  EXPECT_TRUE(al.only0.empty());
  EXPECT_TRUE(al.only1.empty());
}

TEST(CompareAlign, ExtraOpShiftsNamesButTheRestAligns) {
  auto a = seq({"linear", "gelu", "linear", "add", "mse_loss"});
  auto b = seq({"clone", "linear", "gelu", "linear", "add", "mse_loss"});
  Alignment al = alignRank(a, b);
  ASSERT_EQ(al.pairs.size(), 5u);
  ASSERT_EQ(al.only1.size(), 1u);
  EXPECT_EQ(b[al.only1[0]].op, "aten::clone");
  auto n = named(al, a, b);
  EXPECT_EQ(n[0], std::make_pair(std::string("aten::linear.0.fwd"), std::string("aten::linear.1.fwd")));
  EXPECT_EQ(n[4], std::make_pair(std::string("aten::mse_loss.4.fwd"), std::string("aten::mse_loss.5.fwd")));
}

TEST(CompareAlign, MissingAndFusedOps) {
  // DIR1 fuses linear+gelu into one op: the second linear (same shapes) pairs.
  auto a = seq({"linear:8", "gelu:16", "linear:16", "mse_loss:4"});
  auto b = seq({"fused_linear_gelu:8", "linear:16", "mse_loss:4"});
  Alignment al = alignRank(a, b);
  auto n = named(al, a, b);
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].first, "aten::linear.2.fwd");
  EXPECT_EQ(n[0].second, "aten::linear.1.fwd");
  EXPECT_EQ(al.only0.size(), 2u);
  EXPECT_EQ(al.only1.size(), 1u);
}

TEST(CompareAlign, NamesWinWhenOneSideRecordedASubset) {
  // DIR1 recorded with ACC_SKIP: only ops 0, 3 and 6 of the same sequence.
  auto a = seq({"relu", "relu", "relu", "relu", "relu", "relu", "relu"});
  std::vector<RecordMeta> b;
  for (uint64_t n : {0, 3, 6}) {
    auto one = seq({"relu"}, 0, n, n);
    b.push_back(one[0]);
  }
  Alignment al = alignRank(a, b);
  auto n = named(al, a, b);
  ASSERT_EQ(n.size(), 3u);
  for (auto& [x, y] : n) EXPECT_EQ(x, y);
}

TEST(CompareAlign, StepsAlignSeparately) {
  auto a = seq({"linear", "gelu"}, 0);
  auto a1 = seq({"linear", "gelu"}, 1, 2);
  a.insert(a.end(), a1.begin(), a1.end());
  auto b = seq({"linear", "gelu"}, 0);
  auto b2 = seq({"linear"}, 2, 2);
  b.insert(b.end(), b2.begin(), b2.end());
  Alignment al = alignRank(a, b);
  EXPECT_EQ(al.pairs.size(), 2u);
  EXPECT_EQ(al.only0.size(), 2u);  // step 1 only in DIR0
  EXPECT_EQ(al.only1.size(), 1u);  // step 2 only in DIR1
}

TEST(CompareAlign, ReorderedRecordsPairByName) {
  auto a = seq({"linear", "gelu", "add"});
  auto b = seq({"linear", "gelu", "add"});
  std::swap(b[1].index, b[2].index);
  std::swap(b[1], b[2]);  // DIR1 ran add before gelu, names unchanged
  Alignment al = alignRank(a, b);
  EXPECT_EQ(al.pairs.size(), 3u);
  for (auto& [x, y] : named(al, a, b)) EXPECT_EQ(x, y);
}

TEST(CompareAlign, LongSequencesAlignWithinABand) {
  std::vector<std::string> ops0, ops1;
  const char* cycle[] = {"linear", "gelu", "add", "layer_norm", "matmul", "softmax"};
  for (int i = 0; i < 3000; ++i) {
    ops0.push_back(cycle[i % 6]);
    if (i == 10 || i == 1500) ops1.push_back("clone");
    if (i != 2000) ops1.push_back(cycle[i % 6]);
  }
  auto a = seq(ops0), b = seq(ops1);
  Alignment al = alignRank(a, b, /*max_cells=*/200000);  // 3000 x 3001 would need 9M
  EXPECT_FALSE(al.notes.empty());
  EXPECT_EQ(al.pairs.size(), 2999u);
  EXPECT_EQ(al.only0.size(), 1u);
  EXPECT_EQ(al.only1.size(), 2u);
  for (const AlignedPair& p : al.pairs) {
    // Everything before the first clone keeps its number; after it, n + 1; after the second, n + 2.
    uint64_t n0 = a[p.i0].index, n1 = b[p.i1].index;
    uint64_t shift = n0 < 10 ? 0 : n0 < 1500 ? 1 : n0 < 2000 ? 2 : 1;
    EXPECT_EQ(n1, n0 + shift) << a[p.i0].name << " vs " << b[p.i1].name;
  }
}

TEST(CompareAlign, SequenceAlignmentIsAWeightedLcs) {
  std::string x = "ABCBDAB", y = "BDCABA";
  auto pairs = alignSequences(x.size(), y.size(), [&](size_t i, size_t j) { return x[i] == y[j] ? 1 : 0; }, 1 << 20);
  EXPECT_EQ(pairs.size(), 4u);  // LCS length of the textbook example
  for (size_t k = 1; k < pairs.size(); ++k) {
    EXPECT_LT(pairs[k - 1].first, pairs[k].first);
    EXPECT_LT(pairs[k - 1].second, pairs[k].second);
  }
}

}  // namespace
}  // namespace acc::analyzer
