#include "analyzer/compare/engine.h"

#include <cstdint>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <atomic>
#include <memory>
#include <thread>

#include "analyzer/compare/align.h"
#include "analyzer/compare/gradients.h"
#include "analyzer/compare/modules.h"
#include "analyzer/compare/allowed_precision.h"
#include "analyzer/compare/confirm.h"
#include "analyzer/compare/origins.h"
#include "analyzer/compare/rank_rows.h"
#include "analyzer/compare/record_spill.h"
#include "analyzer/compare/summary.h"
#include "analyzer/compare/report_set.h"
#include "analyzer/compare/scan.h"
#include "analyzer/compare/steps.h"
#include "analyzer/compare/stream.h"
#include "analyzer/text.h"

namespace acc::analyzer {
namespace {

UnmatchedRecord unmatched(int side, const RecordMeta& m, int64_t rank) {
  UnmatchedRecord u;
  u.side = side;
  u.name = m.name;
  u.op = m.op;
  u.step = m.step;
  u.rank = rank;
  u.index = m.index;
  u.output_checksum = m.output_checksum;
  return u;
}

}  // namespace

RecordComparison describePair(const RecordMeta& a, const RecordMeta& b, int64_t rank) {
  RecordComparison rc;
  rc.name = a.name;
  if (b.name != a.name) {
    rc.name1 = b.name;
    rc.aligned_by_sequence = true;
  }
  rc.op = a.op;
  rc.grad_fn = a.grad_fn;
  const RecordMeta& with_module = a.has_module || !b.has_module ? a : b;
  rc.has_module = with_module.has_module;
  rc.module = with_module.module;
  rc.pass = a.pass;
  rc.step = a.step;
  rc.rank = rank;
  rc.index0 = a.index;
  rc.index1 = b.index;
  return rc;
}

bool opSelected(const std::vector<std::string>& op_list, const std::string& op, const std::string& name,
                const std::string& grad_fn) {
  if (op_list.empty()) return true;
  const std::string a = lowerCase(op), b = lowerCase(name), c = lowerCase(grad_fn);
  for (const std::string& want : op_list) {
    const std::string w = lowerCase(want);
    if (a.find(w) != std::string::npos || b.find(w) != std::string::npos || c.find(w) != std::string::npos) {
      return true;
    }
  }
  return false;
}

CompareResult compareRecordings(const CompareOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  CompareResult result;
  result.dir0 = options.dir0;
  result.dir1 = options.dir1;
  // Pass 1: metadata of both recordings, read in parallel (InputError when
  // a directory holds no recording at all).
  std::vector<ScannedRank> side0, side1;
  CompareProgress progress;
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  scanRecordings(options.dir0, options.dir1, side0, side1, result.problems, [&](uint64_t scanned, uint64_t expected) {
    if (!options.progress) return;
    progress.records_scanned = scanned;
    progress.records_expected = expected;
    progress.seconds = elapsed();
    options.progress(progress);
  });
  for (const ScannedRank& s : side0) result.records0 += s.records.size();
  for (const ScannedRank& s : side1) result.records1 += s.records.size();

  // Ranks pair by rank number (and, for several directories of one rank,
  // in directory order).
  std::map<std::pair<int64_t, int>, std::pair<ScannedRank*, ScannedRank*>> ranks;
  std::map<int64_t, int> seen0, seen1;
  for (ScannedRank& s : side0) ranks[{s.rank.rank, seen0[s.rank.rank]++}].first = &s;
  for (ScannedRank& s : side1) ranks[{s.rank.rank, seen1[s.rank.rank]++}].second = &s;

  struct RankPlan {
    ScannedRank* a = nullptr;
    ScannedRank* b = nullptr;
    std::vector<AlignedPair> pairs;
  };
  std::vector<RankPlan> plans;
  for (auto& [key, ab] : ranks) {
    auto [a, b] = ab;
    const int64_t rank = key.first;
    if (!a || !b) {
      const ScannedRank* only = a ? a : b;
      result.notes.push_back("rank " + std::to_string(rank) + " (" + only->rank.dir + ") is only in " +
                                (a ? "DIR0" : "DIR1") + "; its records are listed as unmatched");
      for (const RecordMeta& m : only->records) {
        if (opSelected(options.op_list, m.op, m.name, m.grad_fn)) result.unmatched.push_back(unmatched(a ? 0 : 1, m, rank));
      }
      continue;
    }
    Alignment al = alignRank(a->records, b->records);
    for (std::string& note : al.notes) result.notes.push_back("rank " + std::to_string(rank) + ", " + note);
    RankPlan plan{a, b, {}};
    for (const AlignedPair& p : al.pairs) {
      const RecordMeta& m = a->records[p.i0];
      if (!opSelected(options.op_list, m.op, m.name, m.grad_fn)) continue;
      plan.pairs.push_back(p);
      progress.bytes_total += m.data_bytes + b->records[p.i1].data_bytes;
    }
    for (uint32_t i : al.only0) {
      const RecordMeta& m = a->records[i];
      if (opSelected(options.op_list, m.op, m.name, m.grad_fn)) result.unmatched.push_back(unmatched(0, m, rank));
    }
    for (uint32_t j : al.only1) {
      const RecordMeta& m = b->records[j];
      if (opSelected(options.op_list, m.op, m.name, m.grad_fn)) result.unmatched.push_back(unmatched(1, m, rank));
    }
    progress.pairs_total += plan.pairs.size();
    plans.push_back(std::move(plan));
  }

  for (const RankPlan& plan : plans) {
    const nlohmann::json &m0 = plan.a->rank.manifest, &m1 = plan.b->rank.manifest;
    if (&plan == &plans.front()) {
      result.numerics0 = m0.value("numerics", nlohmann::json::object());
      result.numerics1 = m1.value("numerics", nlohmann::json::object());
    }
    for (SettingDifference& d : settingDifferences(m0, m1)) {
      auto same = [&](const SettingDifference& e) { return e.setting == d.setting; };
      if (std::none_of(result.settings_differ.begin(), result.settings_differ.end(), same)) {
        result.settings_differ.push_back(std::move(d));
      }
    }
  }

  // Pass 2: tensor data, streamed; rank pairs side by side, each with its
  // share of the threads and of the memory budget. Each rank pair's rows are
  // judged as they come and spilled to disk (rank_rows.h).
  const unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  auto spill = std::make_shared<RecordSpill>(options.spill_dir);
  struct PlanOutput {
    std::unique_ptr<RankRows> rows;
    std::vector<std::string> problems;
    StreamCounters counters;
  };
  std::vector<PlanOutput> outs(plans.size());
  for (size_t k = 0; k < plans.size(); ++k) {
    outs[k].rows = std::make_unique<RankRows>(*plans[k].a, *plans[k].b, plans[k].pairs, options.thresholds,
                                              options.replay ? options.replay_limit : 0, spill->addPart());
  }
  const size_t concurrent = std::max<size_t>(1, std::min<size_t>(plans.size(), threads));
  progress.scanning = false;
  const double pass2_start = elapsed();
  std::mutex tick_mutex;
  auto tick = [&] {
    if (!options.progress) return;
    std::lock_guard<std::mutex> lock(tick_mutex);
    progress.pairs_done = progress.bytes_done = 0;
    for (const PlanOutput& o : outs) {
      progress.pairs_done += o.counters.pairs_done.load();
      progress.bytes_done += o.counters.bytes_done.load();
    }
    progress.seconds = elapsed();
    progress.comparing_seconds = progress.seconds - pass2_start;
    options.progress(progress);
  };
  auto comparePlan = [&](size_t k) {
    RankPlan& plan = plans[k];
    PlanOutput& out = outs[k];
    StreamJob job;
    job.side0 = plan.a;
    job.side1 = plan.b;
    job.pairs = &plan.pairs;
    job.thresholds = &options.thresholds;
    job.threads = std::max<unsigned>(1, threads / static_cast<unsigned>(concurrent));
    job.memory_budget = std::max<uint64_t>(options.memory_budget / concurrent, uint64_t(1) << 20);
    job.tick = tick;
    job.deliver = [&out](size_t pair, std::vector<TensorPair>&& tensors) { out.rows->deliver(pair, std::move(tensors)); };
    streamCompare(job, out.counters, out.problems);
    out.rows->finish();
  };
  if (concurrent == 1) {
    for (size_t k = 0; k < plans.size(); ++k) comparePlan(k);
  } else {
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    for (size_t t = 0; t < concurrent; ++t) {
      pool.emplace_back([&] {
        for (size_t k; (k = next.fetch_add(1)) < plans.size();) comparePlan(k);
      });
    }
    for (std::thread& t : pool) t.join();
  }
  // Replay of the candidates (one pool of acc-replay workers), then the
  // rank pairs' rows as one sequence: positions shift by the parts before.
  std::unique_ptr<replay::Pool> pool;
  size_t offset = 0;
  const RecordComparison* first_failing = nullptr;
  for (size_t k = 0; k < plans.size(); ++k) {
    PlanOutput& out = outs[k];
    RankRows& rows = *out.rows;
    if (options.replay && !rows.candidates.empty()) {
      if (!pool) pool = std::make_unique<replay::Pool>(options.replay_binary, threads);
      std::vector<RecordComparison> candidates;
      for (size_t c : rows.candidates) candidates.push_back(rows.kept.at(c));
      confirmByReplay(candidates, plans[k].a->rank, plans[k].b->rank, options.thresholds, *pool,
                      options.replay_limit, result.notes);
      for (size_t i = 0; i < candidates.size(); ++i) rows.kept[rows.candidates[i]] = std::move(candidates[i]);
    }
    if (rows.candidates_skipped) {
      result.notes.push_back("rank " + std::to_string(plans[k].a->rank.rank) + ": " +
                             std::to_string(rows.candidates_skipped) + " candidate origin(s) beyond --replay-limit " +
                             std::to_string(options.replay_limit) + " were not replayed (judged by the ratio rule)");
    }
    for (size_t o : rows.origins) {
      auto kept = rows.kept.find(o);
      // Replay may have shown a candidate to amplify its inputs' error.
      if (kept == rows.kept.end() || kept->second.origin) result.origins.push_back(offset + o);
    }
    result.origins_not_kept += rows.origins_not_kept;
    for (auto& [position, record] : rows.kept) result.kept[offset + position] = std::move(record);
    if (rows.first_failing != SIZE_MAX) {
      const RecordComparison& f = result.kept.at(offset + rows.first_failing);
      if (!first_failing || comesFirst(f, *first_failing)) {
        first_failing = &f;
        result.first_failing = offset + rows.first_failing;
      }
    }
    for (std::string& p : out.problems) result.problems.push_back(std::move(p));
    result.tensors_compared += rows.tensors_compared;
    result.bytes_compared += out.counters.bytes_done;
    result.pairs_reused += out.counters.pairs_reused;
    // Held side by side: the peaks add up.
    result.peak_held_bytes += out.counters.peak_held_bytes;
    offset += plans[k].pairs.size();
  }
  result.spill = spill;
  // Origins not kept are listed in report.csv only: their positions go.
  result.origins.erase(std::remove_if(result.origins.begin(), result.origins.end(),
                                      [&](size_t o) { return !result.kept.count(o); }),
                       result.origins.end());
  sortOrigins(result);  // execution order across ranks
  result.modules = summarizeModules(result);  // before report filters drop rows
  result.gradients = gradientMap(result);
  result.steps = summarizeSteps(result);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace acc::analyzer
