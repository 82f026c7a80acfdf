#include "analyzer/compare/engine.h"

#include "analyzer/read/json_fields.h"
#include "analyzer/read/recording_notes.h"

#include <cstdint>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <atomic>
#include <memory>
#include <thread>

#include "analyzer/compare/align.h"
#include "analyzer/compare/gradients.h"
#include "analyzer/compare/modules.h"
#include "analyzer/judge/allowed_precision.h"
#include "analyzer/judge/confirm.h"
#include "analyzer/judge/origins.h"
#include "analyzer/compare/rank_rows.h"
#include "analyzer/compare/record_spill.h"
#include "analyzer/report/summary.h"
#include "analyzer/report/report_set.h"
#include "analyzer/compare/meta_stream.h"
#include "analyzer/compare/windows.h"
#include "analyzer/compare/steps.h"
#include "analyzer/compare/stream.h"
#include "analyzer/common/text.h"

namespace acc::analyzer {

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

// Keeps the ranks asked for; InputError naming a rank neither side holds.
void selectRanks(const std::vector<int64_t>& wanted, std::vector<RankRecording>& side0,
                 std::vector<RankRecording>& side1) {
  std::set<int64_t> held;
  for (const auto* side : {&side0, &side1}) {
    for (const RankRecording& r : *side) held.insert(r.rank);
  }
  for (int64_t rank : wanted) {
    if (held.count(rank) == 0) {
      std::string list;
      for (int64_t h : held) list += (list.empty() ? "" : ",") + std::to_string(h);
      throw InputError("--ranks: rank " + std::to_string(rank) + " is in neither recording (they hold ranks " + list +
                       ")");
    }
  }
  const std::set<int64_t> keep(wanted.begin(), wanted.end());
  for (auto* side : {&side0, &side1}) {
    side->erase(std::remove_if(side->begin(), side->end(), [&](const RankRecording& r) { return keep.count(r.rank) == 0; }),
                side->end());
  }
}

CompareResult compareRecordings(const CompareOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  CompareResult result;
  result.dir0 = options.dir0;
  result.dir1 = options.dir1;
  // InputError when a directory holds no recording at all.
  std::vector<RankRecording> side0 = openRecording(options.dir0);
  std::vector<RankRecording> side1 = openRecording(options.dir1);
  if (!options.ranks.empty()) selectRanks(options.ranks, side0, side1);
  result.recording_notes = recordingNotes(side0);
  for (std::string& n : recordingNotes(side1)) result.recording_notes.push_back(std::move(n));

  // Ranks pair by rank number (and, for several directories of one rank,
  // in directory order); a rank of one side only is a plan of its own,
  // whose records are all unmatched.
  struct RankPlan {
    const RankRecording* a = nullptr;
    const RankRecording* b = nullptr;
    int64_t rank = 0;
  };
  std::map<std::pair<int64_t, int>, RankPlan> ranks;
  std::map<int64_t, int> seen0, seen1;
  for (const RankRecording& r : side0) ranks[{r.rank, seen0[r.rank]++}].a = &r;
  for (const RankRecording& r : side1) ranks[{r.rank, seen1[r.rank]++}].b = &r;
  std::vector<RankPlan> plans;
  CompareProgress progress;
  for (auto& [key, plan] : ranks) {
    plan.rank = key.first;
    plans.push_back(plan);
    if (plan.a && plan.b) progress.pairs_total += std::min(expectedRecords(*plan.a), expectedRecords(*plan.b));
  }
  const uint64_t expected_pairs = progress.pairs_total;

  bool first_pair = true;
  for (const RankPlan& plan : plans) {
    if (!plan.a || !plan.b) {
      const RankRecording* only = plan.a ? plan.a : plan.b;
      result.notes.push_back("rank " + std::to_string(plan.rank) + " (" + only->dir + ") is only in " +
                             (plan.a ? "DIR0" : "DIR1") + "; its records are listed as unmatched");
      continue;
    }
    const nlohmann::json &m0 = plan.a->manifest, &m1 = plan.b->manifest;
    if (first_pair) {
      result.numerics0 = objectField(m0, "numerics");
      result.numerics1 = objectField(m1, "numerics");
      first_pair = false;
    }
    for (SettingDifference& d : settingDifferences(m0, m1)) addSettingDifference(result.settings_differ, std::move(d));
  }

  // Each rank pair in one pass over each records file: metadata read and
  // aligned a window at a time (windows.h), the paired records' data
  // streamed and compared, the rows judged as they come and spilled to disk
  // (rank_rows.h). Rank pairs run side by side, each with its share of the
  // threads and of the memory budget.
  const unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  auto spill = std::make_shared<RecordSpill>(options.spill_dir);
  struct PlanOutput {
    std::unique_ptr<RankRows> rows;
    std::vector<std::string> problems, notes;
    std::vector<UnmatchedRecord> unmatched;  // the first kMaxUnmatched
    uint64_t unmatched_not_listed[2] = {0, 0};
    uint64_t records0 = 0, records1 = 0;
    StreamCounters counters;
    std::atomic<uint64_t> pairs{0};  // aligned so far
  };
  std::vector<PlanOutput> outs(plans.size());
  std::vector<RecordSpill::Part*> parts;
  for (size_t k = 0; k < plans.size(); ++k) {
    parts.push_back(&spill->addPart());
    result.part_ranks.push_back(plans[k].rank);
  }
  const size_t concurrent = std::max<size_t>(1, std::min<size_t>(plans.size(), threads));
  std::mutex tick_mutex;
  auto tick = [&] {
    if (!options.progress) return;
    std::lock_guard<std::mutex> lock(tick_mutex);
    uint64_t aligned = 0;
    progress.pairs_done = progress.bytes_done = 0;
    for (const PlanOutput& o : outs) {
      progress.pairs_done += o.counters.pairs_done.load();
      progress.bytes_done += o.counters.bytes_done.load();
      aligned += o.pairs.load();
    }
    progress.pairs_total = std::max(expected_pairs, aligned);
    progress.seconds = elapsed();
    options.progress(progress);
  };
  auto comparePlan = [&](size_t k) {
    const RankPlan& plan = plans[k];
    PlanOutput& out = outs[k];
    // Each side's metadata, read on a thread of its own.
    std::unique_ptr<MetaStream> streams[2];
    if (plan.a) streams[0] = std::make_unique<MetaStream>(*plan.a);
    if (plan.b) streams[1] = std::make_unique<MetaStream>(*plan.b);
    auto source = [](MetaStream* s) -> WindowAligner::Source {
      if (!s) return [](MetaItem&) { return false; };
      return [s](MetaItem& item) { return s->next(item); };
    };
    WindowAligner aligner(source(streams[0].get()), source(streams[1].get()), options.op_list);
    static const StackTable kNoStacks;
    const RankRecording& a = plan.a ? *plan.a : *plan.b;
    const RankRecording& b = plan.b ? *plan.b : *plan.a;
    // The rows refer to DIR0's stacks only while they are judged (until finish()).
    out.rows = std::make_unique<RankRows>(a, b, streams[0] ? streams[0]->stacks() : kNoStacks, options.thresholds,
                                          options.replay ? options.replay_limit : 0, *parts[k]);
    auto unmatched = [&](int side, const RecordMeta& m) {
      if (out.unmatched.size() >= CompareResult::kMaxUnmatched) {
        ++out.unmatched_not_listed[side];
        return;
      }
      UnmatchedRecord u;
      u.side = side;
      u.name = m.name;
      u.op = m.op;
      u.grad_fn = m.grad_fn.str();
      u.step = m.step;
      u.rank = plan.rank;
      u.index = m.index;
      u.output_checksum = m.output_checksum;
      out.unmatched.push_back(std::move(u));
    };
    StreamJob job;
    const bool both = streams[0] && streams[1] && streams[0]->readable() && streams[1]->readable();
    if (both) {
      job.file0 = recordsFile(*plan.a);
      job.file1 = recordsFile(*plan.b);
    }
    job.next_window = [&]() -> std::shared_ptr<const AlignedWindow> {
      std::shared_ptr<AlignedWindow> w = aligner.next();
      if (!w) return nullptr;
      for (std::string& note : w->notes) out.notes.push_back("rank " + std::to_string(plan.rank) + ", " + note);
      for (uint32_t i : w->only0) unmatched(0, w->m0[i]);
      for (uint32_t j : w->only1) unmatched(1, w->m1[j]);
      out.rows->addWindow(w);
      out.pairs += w->pairs.size();
      return w;
    };
    job.thresholds = &options.thresholds;
    job.threads = std::max<unsigned>(1, threads / static_cast<unsigned>(concurrent));
    job.memory_budget = std::max<uint64_t>(options.memory_budget / concurrent, uint64_t(1) << 20);
    job.tick = tick;
    job.deliver = [&out](uint64_t pair, std::vector<TensorPair>&& tensors) {
      out.rows->deliver(pair, std::move(tensors));
    };
    std::vector<std::string> problems;
    streamCompare(job, out.counters, problems);
    out.rows->finish();
    for (int side = 0; side < 2; ++side) {
      if (!streams[side]) continue;
      (side == 0 ? out.records0 : out.records1) = streams[side]->records();
      const std::string p = streams[side]->problem();
      if (!p.empty()) out.problems.push_back(p);
    }
    for (std::string& p : problems) out.problems.push_back(std::move(p));
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
  tick();
  for (PlanOutput& out : outs) {
    result.records0 += out.records0;
    result.records1 += out.records1;
    for (std::string& n : out.notes) result.notes.push_back(std::move(n));
    for (UnmatchedRecord& u : out.unmatched) {
      if (result.unmatched.size() < CompareResult::kMaxUnmatched) {
        result.unmatched.push_back(std::move(u));
      } else {
        ++result.unmatched_not_listed[u.side];
      }
    }
    result.unmatched_not_listed[0] += out.unmatched_not_listed[0];
    result.unmatched_not_listed[1] += out.unmatched_not_listed[1];
  }
  if (result.unmatched_not_listed[0] + result.unmatched_not_listed[1]) {
    result.notes.push_back(std::to_string(result.unmatched_not_listed[0] + result.unmatched_not_listed[1]) +
                           " unmatched record(s) beyond the first " + std::to_string(CompareResult::kMaxUnmatched) +
                           " are counted, not listed");
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
      confirmByReplay(candidates, *plans[k].a, *plans[k].b, options.thresholds, *pool,
                      options.replay_limit, result.notes);
      for (size_t i = 0; i < candidates.size(); ++i) rows.kept[rows.candidates[i]] = std::move(candidates[i]);
    }
    if (rows.candidates_skipped) {
      result.notes.push_back("rank " + std::to_string(plans[k].rank) + ": " +
                             std::to_string(rows.candidates_skipped) + " candidate origin(s) beyond --replay-limit " +
                             std::to_string(options.replay_limit) + " were not replayed (judged by the ratio rule)");
    }
    if (rows.screened_skipped) {
      result.notes.push_back("rank " + std::to_string(plans[k].rank) + ": " + std::to_string(rows.screened_skipped) +
                             " output(s) below the fail threshold but beyond what their inputs explain were not "
                             "replayed (--replay-limit " + std::to_string(options.replay_limit) + ")");
    }
    for (size_t o : rows.origins) {
      auto kept = rows.kept.find(o);
      // Replay may have shown a candidate to amplify its inputs' error.
      if (kept == rows.kept.end() || kept->second.origin) result.origins.push_back(offset + o);
    }
    // Screened records replay found wrong are origins too.
    for (size_t o : rows.screened) {
      if (rows.kept.at(o).origin) result.origins.push_back(offset + o);
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
    offset += rows.size();
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
  if (pool) result.replay_stderr = pool->workerStderr();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace acc::analyzer
