// recorder::RowStats (the statistics of many tensors in one batch of
// kernels) and recorder::StatsBatch (which gathers them) must give what the
// fused CPU pass gives: min, max, counts and checksum exactly, mean and norm
// to float32 accuracy per row. ATen's CPU kernels run the same code a device
// would, so CPU tensors test it here; tests/accelerator runs it on a device.
#include "recorder/capture/cpu/row_stats.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "recorder/capture/device/fused_stats.h"
#include "recorder/capture/device/stats_batch.h"
#include "recorder/capture/cpu/tensor_stats.h"

namespace acc::recorder {
namespace {

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Mean and norm within float32 rounding of the tensor's scale (the norm).
void expectStats(const format::Stats& want, const format::Stats& got, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(want.checksum, got.checksum);
  EXPECT_EQ(want.nan_count, got.nan_count);
  EXPECT_EQ(want.inf_count, got.inf_count);
  EXPECT_TRUE(same(want.min, got.min)) << want.min << " vs " << got.min;
  EXPECT_TRUE(same(want.max, got.max)) << want.max << " vs " << got.max;
  if (!std::isfinite(want.mean) || !std::isfinite(want.norm)) {
    EXPECT_TRUE(same(want.mean, got.mean));
    EXPECT_TRUE(same(want.norm, got.norm));
    return;
  }
  EXPECT_LE(std::fabs(want.mean - got.mean), 1e-6 * std::max(want.norm, 1e-300)) << want.mean << " vs " << got.mean;
  EXPECT_LE(std::fabs(want.norm - got.norm), 1e-6 * std::max(want.norm, 1e-300)) << want.norm << " vs " << got.norm;
}

// Tensors of every type, size class (empty, one element, below a row, whole
// rows, rows and a tail, a chunk large enough for the lean formulas, rows
// kWidthStep and kWidthStep^2 times wider with what is left in narrow rows,
// where 16 rows make a tensor wide) and layout.
std::vector<std::pair<std::string, at::Tensor>> mixedTensors() {
  at::manual_seed(7);
  std::vector<std::pair<std::string, at::Tensor>> out;
  const std::vector<int64_t> sizes = {0, 1, 5, kRowWidth - 1, kRowWidth, 3 * kRowWidth + 17,
                                      kLeanChunk + 2 * kRowWidth + 3,
                                      3 * 16 * kWidthStep * kRowWidth + kRowWidth + 7,
                                      16 * kWidthStep * kWidthStep * kRowWidth + 5};
  const std::vector<at::ScalarType> floats = {at::kFloat, at::kHalf, at::kBFloat16, at::kDouble};
  for (int64_t n : sizes) {
    for (at::ScalarType type : floats) {
      out.emplace_back(std::string(c10::toString(type)) + "[" + std::to_string(n) + "]",
                       (at::randn({n}, at::kDouble) * 5 - 1).to(type));
    }
    out.emplace_back("int64[" + std::to_string(n) + "]", at::randint(-(int64_t{1} << 40), int64_t{1} << 40, {n}, at::kLong));
    out.emplace_back("int32[" + std::to_string(n) + "]", at::randint(-100000, 100000, {n}, at::kInt));
    out.emplace_back("int8[" + std::to_string(n) + "]", at::randint(-128, 128, {n}, at::kChar));
    out.emplace_back("uint8[" + std::to_string(n) + "]", at::randint(0, 256, {n}, at::kByte));
    out.emplace_back("bool[" + std::to_string(n) + "]", at::randint(0, 2, {n}, at::kLong).to(at::kBool));
  }
  // All positive and all negative (a zero pad must not become the min or
  // max), a 0-d tensor, a transposed and a channels-last one, complex, and
  // non-finite values.
  out.emplace_back("positive", at::rand({2 * kRowWidth + 9}) + 1);
  out.emplace_back("negative", -at::rand({kRowWidth + 9}) - 1);
  out.emplace_back("0-d", at::scalar_tensor(3.5));
  out.emplace_back("transposed", at::randn({67, 45}).t());
  out.emplace_back("channels_last", at::randn({2, 3, 9, 11}).contiguous(at::MemoryFormat::ChannelsLast));
  out.emplace_back("complex64", at::randn({300}, at::kComplexFloat));
  at::Tensor bad = at::randn({2 * kRowWidth + 5});
  bad[3] = std::numeric_limits<float>::quiet_NaN();
  bad[kRowWidth + 4] = std::numeric_limits<float>::infinity();
  out.emplace_back("nan_inf", bad);
  at::Tensor lean = at::randn({kLeanChunk + 77});  // its counts in bytes (rowCount)
  lean.narrow(0, 5000, 300).fill_(std::numeric_limits<float>::quiet_NaN());
  lean.narrow(0, 9000, 129).fill_(-std::numeric_limits<float>::infinity());
  out.emplace_back("nan_inf_lean", lean);
  at::Tensor inf = at::randn({40}, at::kBFloat16);
  inf[7] = -std::numeric_limits<float>::infinity();
  out.emplace_back("bf16_inf", inf);
  return out;
}

// Adds the tensors to `kernels` in order (each index checked) and returns
// what the fused CPU pass gives each: what its stats() must give.
std::vector<format::Stats> addAll(StatsKernels& kernels, const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  std::vector<format::Stats> want;
  for (const auto& [name, t] : tensors) {
    want.push_back(tensorStatsFused(t));
    EXPECT_EQ(kernels.add(t), want.size() - 1) << name;
  }
  return want;
}

// At the default chunk size and at one so small that every width class is
// cut into many chunks and the widest rows do not fit; wide rows from 16
// rows on (the large tensors of mixedTensors() take them) and from kMinRows.
class RowStatsChunks : public ::testing::TestWithParam<std::pair<int64_t, int64_t>> {};

TEST_P(RowStatsChunks, EveryTensorOfABatchHasTheFusedPassStatistics) {
  const auto tensors = mixedTensors();
  RowStats rows(GetParam().first, GetParam().second);
  const std::vector<format::Stats> want = addAll(rows, tensors);
  const at::Tensor partials = rows.launch();
  ASSERT_EQ(partials.scalar_type(), at::kDouble);
  ASSERT_EQ(partials.dim(), 1);
  const at::Tensor host = partials.contiguous();
  for (size_t i = 0; i < tensors.size(); ++i) {
    expectStats(want[i], rows.stats(i, host.data_ptr<double>(), static_cast<size_t>(host.numel())), tensors[i].first);
  }
}

INSTANTIATE_TEST_SUITE_P(ChunkBytesAndMinRows, RowStatsChunks,
                         ::testing::Values(std::pair{kDefaultChunkBytes, int64_t{16}},
                                           std::pair{int64_t{1} << 20, int64_t{16}},
                                           std::pair{kDefaultChunkBytes, kMinRows}));

// acc::tensor_stats, the op a device's own kernel implements: its CPU kernel
// (what the test device runs) gives every tensor exactly the fused pass's
// statistics, in one call for all of them.
TEST(FusedStats, EveryTensorOfABatchHasExactlyTheFusedPassStatistics) {
  const auto tensors = mixedTensors();
  EXPECT_TRUE(hasFusedStats(at::Device(at::kCPU)));
  FusedStats fused;
  const std::vector<format::Stats> want = addAll(fused, tensors);
  const at::Tensor values = fused.launch();
  ASSERT_EQ(values.scalar_type(), at::kDouble);
  ASSERT_EQ(values.sizes(), (std::vector<int64_t>{static_cast<int64_t>(tensors.size()), kDeviceStatsSize}));
  const at::Tensor host = values.contiguous();
  for (size_t i = 0; i < tensors.size(); ++i) {
    SCOPED_TRACE(tensors[i].first);
    const format::Stats got = fused.stats(i, host.data_ptr<double>(), static_cast<size_t>(host.numel()));
    EXPECT_EQ(want[i].checksum, got.checksum);
    EXPECT_EQ(want[i].nan_count, got.nan_count);
    EXPECT_EQ(want[i].inf_count, got.inf_count);
    EXPECT_TRUE(same(want[i].min, got.min) && same(want[i].max, got.max));
    EXPECT_TRUE(same(want[i].mean, got.mean)) << want[i].mean << " vs " << got.mean;
    EXPECT_TRUE(same(want[i].norm, got.norm)) << want[i].norm << " vs " << got.norm;
  }
  EXPECT_THROW(fused.stats(tensors.size(), host.data_ptr<double>(), static_cast<size_t>(host.numel())),
               std::out_of_range);
  EXPECT_THROW(fused.stats(1, host.data_ptr<double>(), kDeviceStatsSize), std::out_of_range);
  // Nothing added: no launch.
  EXPECT_FALSE(FusedStats().launch().defined());
}

// A device without a kernel of its own (a CUDA build, a plugin that gives
// none) and the unit tests' CPU batches take ATen's rows.
TEST(FusedStats, DevicesWithoutAKernelTakeTheRows) {
  EXPECT_NE(dynamic_cast<RowStats*>(statsKernelsFor(at::Device(at::kCPU), kDefaultChunkBytes).get()), nullptr);
  EXPECT_FALSE(hasFusedStats(at::Device(at::kMeta)));
}

TEST(RowStats, ABufferTooShortIsRefusedNotRead) {
  RowStats rows;
  rows.add(at::randn({3 * kRowWidth}));
  const at::Tensor partials = rows.launch();
  EXPECT_THROW(rows.stats(0, partials.data_ptr<double>(), 3), std::out_of_range);
}

// A tensor an op filled with one value (zero_grad's zero_, ones_like) has
// statistics known without reading it: those of the fused pass. Each
// (value, type) is asked once per length, so all but the first come from
// constantStats' per-thread cache, refusals included, and the pairs
// outgrow its eight entries.
TEST(ConstantStats, EqualTheFusedPassOnAFilledTensor) {
  const double values[] = {0.0, 1.0, 0.1, -2.5, 3e38, std::numeric_limits<double>::quiet_NaN(),
                           -std::numeric_limits<double>::infinity()};
  const at::ScalarType types[] = {at::kFloat, at::kBFloat16, at::kHalf, at::kDouble, at::kLong, at::kInt, at::kByte,
                                  at::kBool};
  for (at::ScalarType type : types) {
    for (double v : values) {
      if (!at::isFloatingType(type) && !std::isfinite(v)) continue;
      if (type == at::kByte && v < 0) continue;
      for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{5000}}) {
        const std::string what = std::string(c10::toString(type)) + " " + std::to_string(v) + " x" + std::to_string(n);
        const std::optional<format::Stats> known = constantStats(v, type, static_cast<uint64_t>(n));
        // 3e38 in half: full() refuses it, while torch 2.14's scalar_tensor
        // stores inf; either way it is no known constant.
        if (type == at::kHalf && v == 3e38) {
          EXPECT_FALSE(known.has_value()) << what;
          continue;
        }
        at::Tensor t;
        try {
          t = at::full({n}, v, at::TensorOptions().dtype(type));
        } catch (const std::exception&) {
          EXPECT_FALSE(known.has_value()) << what;  // 3e38 in an integer type
          continue;
        }
        ASSERT_TRUE(known.has_value()) << what;
        expectStats(tensorStatsFused(t), *known, what);
      }
    }
  }
  EXPECT_FALSE(constantStats(1.0, at::kComplexFloat, 4).has_value());
}

// The batch as the recorder uses it, on CPU tensors: tickets resolve once
// the batch has run, writes the dispatcher announces are protected against,
// and a write behind its back is caught by the version counter.
TEST(StatsBatch, TicketsResolveAfterTheBatchRuns) {
  StatsBatch batch(4, 1 << 20);
  at::Tensor a = at::randn({100}), b = at::randn({kRowWidth * 2 + 1}, at::kDouble);
  const format::Stats wa = tensorStatsFused(a), wb = tensorStatsFused(b);
  StatsTicket ta = batch.add(a), tb = batch.add(b);
  ASSERT_TRUE(ta.flight);
  EXPECT_EQ(ta.flight, tb.flight);
  EXPECT_FALSE(ta.flight->launched());
  EXPECT_FALSE(ta.flight->arrived());
  batch.flush();
  ASSERT_TRUE(ta.flight->arrived());  // the CPU's events complete at once
  expectStats(wa, *ta.flight->stats(ta.slot), "a");
  expectStats(wb, *tb.flight->stats(tb.slot), "b");
  EXPECT_EQ(batch.counts().batches, 1u);
  EXPECT_EQ(batch.counts().tensors, 2u);
}

TEST(StatsBatch, RunsWhenFull) {
  StatsBatch batch(3, 1 << 20);
  std::vector<StatsTicket> tickets;
  for (int i = 0; i < 3; ++i) tickets.push_back(batch.add(at::randn({10})));
  EXPECT_TRUE(tickets[0].flight->launched());
  StatsTicket next = batch.add(at::randn({10}));
  EXPECT_NE(next.flight, tickets[0].flight);
  EXPECT_FALSE(next.flight->launched());
  batch.flushIfOpen(tickets[0].flight.get());  // no longer open: nothing
  EXPECT_FALSE(next.flight->launched());
  batch.flushIfOpen(next.flight.get());
  EXPECT_TRUE(next.flight->launched());
}

TEST(StatsBatch, AWriteBehindTheDispatchersBackDropsTheStatistics) {
  StatsBatch batch(8, 1 << 20);
  at::Tensor t = at::randn({50});
  StatsTicket ticket = batch.add(t);
  t.unsafeGetTensorImpl()->bump_version();  // as an in-place op would, unannounced
  batch.flush();
  ASSERT_TRUE(ticket.flight->arrived());
  EXPECT_FALSE(ticket.flight->stats(ticket.slot).has_value());
  EXPECT_EQ(batch.counts().stale, 1u);
}

// A batch runs once the tensors only it still holds take more than its
// bound; a view holds its base (autograd's views do on every torch), so a
// freed temporary and its views waiting together are acc's alone, while a
// view the program keeps holds the base's storage for the program. Every
// tensor here takes more than an eighth of the bound, so the bound is
// looked at each time one joins.
TEST(StatsBatch, RunsOnceTheTensorsOnlyItHoldsPassItsBound) {
  constexpr int64_t kBound = 1 << 20;
  StatsBatch batch(1000, kBound);
  at::Tensor keep = at::randn({kBound / 4});  // 1 MiB, held throughout
  // 2 MiB, made by an op from a parameter, as a layer's output is (a view
  // of a parameter itself is also held by its gradient's accumulator)
  at::Tensor parameter = at::randn({kBound / 2}).requires_grad_();
  auto temporary = [&] { return parameter * 2; };
  {
    at::Tensor base = temporary();
    at::Tensor view = base.narrow(0, 0, kBound / 4);
    ASSERT_TRUE(view.is_view());
    StatsTicket first = batch.add(base);
    batch.add(view);
    base.reset();  // the program keeps the view, so the storage is still its
    batch.add(keep);
    EXPECT_FALSE(first.flight->launched());
    view.reset();  // now acc alone holds the temporary, its view and their storage
    batch.add(keep);
    EXPECT_TRUE(first.flight->launched());
  }
  {
    at::Tensor base = temporary();
    StatsTicket first = batch.add(base);
    batch.add(base.narrow(0, 0, kBound / 4));
    batch.add(base.narrow(0, kBound / 4, kBound / 4));  // the base holds three references of acc's
    batch.add(keep);
    EXPECT_FALSE(first.flight->launched());  // the program holds the base
    base.reset();
    batch.add(keep);
    EXPECT_TRUE(first.flight->launched());
  }
  {
    at::Tensor base = temporary();
    StatsTicket first = batch.add(base);
    base.reset();
    batch.add(keep);
    batch.add(keep);  // the same tensor twice: still the program's
    EXPECT_TRUE(first.flight->launched());
    StatsTicket kept = batch.add(keep);
    batch.add(keep);
    EXPECT_FALSE(kept.flight->launched());
  }
  EXPECT_EQ(batch.counts().stale, 0u);
}

}  // namespace
}  // namespace acc::recorder
