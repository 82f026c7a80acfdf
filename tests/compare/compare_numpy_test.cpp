// compare's metrics agree with an independent numpy computation (from the
// formulas in docs/METRICS.md) on the level-2 data of real recordings.
#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <cmath>
#include <fstream>

#include "analyzer/common/elements.h"
#include "analyzer/compare/engine.h"
#include "tests/compare/recordings.h"

namespace acc::test {
namespace {

using analyzer::CompareResult;
using analyzer::RecordComparison;
using analyzer::TensorPair;

const format::Tensor* findTensor(const Recording& rec, uint64_t index, const TensorPair& p) {
  const format::OpRecord* r = nullptr;
  for (const format::OpRecord& x : rec.records) {
    if (x.index == index) r = &x;
  }
  if (!r) return nullptr;
  for (const format::Tensor& t : r->tensors) {
    if (t.role == p.role && t.position == p.position && t.item == p.item) return &t;
  }
  return nullptr;
}

// Sums may be accumulated in another order (numpy sums pairwise): 1e-9
// relative; maxima and counts are the same floating-point operations: exact.
void expectClose(double ours, const nlohmann::json& ref, const std::string& what, double rel_tol) {
  double r = ref.is_number() ? ref.get<double>() : std::nan("");
  if (std::isnan(r) || std::isnan(ours)) {
    EXPECT_TRUE(std::isnan(r) && std::isnan(ours)) << what << ": ours " << ours << ", numpy " << ref;
    return;
  }
  EXPECT_LE(std::fabs(ours - r), rel_tol * std::max(std::fabs(r), 1e-300)) << what << ": ours " << ours
                                                                          << ", numpy " << r;
}

void checkAgainstNumpy(Variant v0, Variant v1) {
  const std::string dir0 = recording(v0), dir1 = recording(v1);
  analyzer::CompareOptions options;
  options.dir0 = dir0;
  options.dir1 = dir1;
  CompareResult result = analyzer::compareRecordings(options);
  Recording rec0 = readRank(dir0 + "/rank0"), rec1 = readRank(dir1 + "/rank0");
  TempDir work;
  nlohmann::json index = nlohmann::json::array();
  std::vector<analyzer::TensorMetrics> ours;
  std::vector<RecordComparison> records;  // compare spills its rows: read them back
  analyzer::forEachRecord(result, [&](size_t, const RecordComparison& r) { records.push_back(r); });
  for (const RecordComparison& r : records) {
    for (const TensorPair& p : r.tensors) {
      if (!p.metrics.compared || p.metrics.from_stats) continue;
      const format::Tensor* t0 = findTensor(rec0, r.index0, p);
      const format::Tensor* t1 = findTensor(rec1, r.index1, p);
      ASSERT_TRUE(t0 && t1 && t0->has_data && t1->has_data) << r.name;
      const std::string id = std::to_string(ours.size());
      for (int side = 0; side < 2; ++side) {
        const format::Tensor* t = side ? t1 : t0;
        std::ofstream(work / (id + "_" + std::to_string(side) + ".bin"), std::ios::binary) << t->data;
      }
      index.push_back({{"id", ours.size()},
                       {"file0", work / (id + "_0.bin")},
                       {"dtype0", format::dtypeName(t0->dtype)},
                       {"file1", work / (id + "_1.bin")},
                       {"dtype1", format::dtypeName(t1->dtype)}});
      ours.push_back(p.metrics);
    }
  }
  ASSERT_GT(ours.size(), 50u);
  std::ofstream(work / "index.json") << index.dump();
  RunResult py = run({{python(), std::string(ACC_SOURCE_DIR) + "/tests/compare/numpy_metrics.py", work / "index.json"},
                      {},
                      "",
                      false,
                      ""});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  nlohmann::json reference = nlohmann::json::parse(py.out);
  ASSERT_EQ(reference.size(), ours.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    const analyzer::TensorMetrics& m = ours[i];
    const nlohmann::json& ref = reference[i];
    const std::string what = "pair " + std::to_string(i) + " " + index[i].dump();
    expectClose(m.max_abs, ref["max_abs"], what + " max_abs", 0);
    expectClose(m.max_rel, ref["max_rel"], what + " max_rel", 0);
    expectClose(m.max_ulp, ref["max_ulp"], what + " max_ulp", 0);
    expectClose(m.mean_abs, ref["mean_abs"], what + " mean_abs", 1e-9);
    expectClose(m.rmse, ref["rmse"], what + " rmse", 1e-9);
    expectClose(m.rel_l2, ref["rel_l2"], what + " rel_l2", 1e-9);
    expectClose(m.cosine, ref["cosine"], what + " cosine", 1e-12);
    expectClose(m.within_1e3, ref["within_1e3"], what + " within_1e3", 0);
    expectClose(m.within_5e3, ref["within_5e3"], what + " within_5e3", 0);
    EXPECT_EQ(m.nan_mismatch, ref["nan_mismatch"].get<uint64_t>()) << what;
    EXPECT_EQ(m.inf_mismatch, ref["inf_mismatch"].get<uint64_t>()) << what;
  }
}

TEST(CompareNumpy, SameDtypeMetricsAgree) { checkAgainstNumpy(Variant::Reference, Variant::WrongForward); }

TEST(CompareNumpy, CrossDtypeMetricsAgree) { checkAgainstNumpy(Variant::Float64, Variant::Reference); }

}  // namespace
}  // namespace acc::test
