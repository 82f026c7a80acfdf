#include "analyzer/report/summary.h"
#include "analyzer/judge/origins.h"
#include "analyzer/compare/gradients.h"
#include "analyzer/report/record_json.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace acc::analyzer {
namespace {

constexpr size_t kListed = 1000;  // origins and unmatched records listed at most

// Metrics a level-1 comparison cannot give are null.
nlohmann::json metric(const TensorMetrics& m, double v) {
  if (m.from_stats && std::isnan(v)) return nullptr;
  return jsonNumber(v);
}

}  // namespace

CompareCounts countResult(const CompareResult& r) {
  CompareCounts c;
  for (const UnmatchedRecord& u : r.unmatched) (u.side == 0 ? c.unmatched0 : c.unmatched1)++;
  c.unmatched0 += r.unmatched_not_listed[0];
  c.unmatched1 += r.unmatched_not_listed[1];
  forEachRecord(r, [&](size_t, const RecordComparison& rc) {
    ++c.matched;
    (rc.verdict == Verdict::Fail ? c.records_fail : rc.verdict == Verdict::Warn ? c.records_warn : c.records_pass)++;
    for (const TensorPair& p : rc.tensors) {
      (p.metrics.compared ? c.pairs_compared : c.pairs_not_compared)++;
      (p.verdict == Verdict::Fail ? c.pairs_fail : p.verdict == Verdict::Warn ? c.pairs_warn : c.pairs_pass)++;
    }
  });
  return c;
}

bool comesFirst(const RecordComparison& a, const RecordComparison& b) {
  return std::tie(a.step, a.index0, a.rank) < std::tie(b.step, b.index0, b.rank);
}

bool failsFirstCandidate(const RecordComparison& r) { return r.verdict == Verdict::Fail && !isGradientRecord(r); }

const RecordComparison* firstDivergence(const CompareResult& r) {
  if (const RecordComparison* o = r.firstOrigin()) return o;
  if (r.spill) return r.first_failing == SIZE_MAX ? nullptr : &recordAt(r, r.first_failing);
  const RecordComparison* first = nullptr;
  for (const RecordComparison& rc : r.records) {
    if (failsFirstCandidate(rc) && (!first || comesFirst(rc, *first))) first = &rc;
  }
  return first;
}

Ending endingOf(const CompareResult& r) {
  const RecordComparison* first = firstDivergence(r);
  if (!first) return Ending::Match;
  if (!first->origin && (first->replay.state == ReplayState::Amplifies ||
                         first->replay.state == ReplayState::MayAmplify || first->inherits_recorded)) {
    return Ending::Drift;
  }
  // Its failing input came through a dtype cast only one run has (an
  // autocast run's ToCopyBackward0 beside an fp32 run): the error is what
  // the recorded ops before the cast made, not a difference from outside.
  if (!first->origin && !first->from_other_ranks) {
    if (const Feeder f = feederOf(r, *first); f.record && isDtypeCast(*f.record)) return Ending::Drift;
  }
  return Ending::Divergence;
}

std::vector<const UnmatchedRecord*> unmatchedBefore(const CompareResult& result, const RecordComparison& r,
                                                    size_t limit) {
  std::vector<const UnmatchedRecord*> out;
  for (const UnmatchedRecord& u : result.unmatched) {
    if (u.rank != r.rank || u.step != r.step) continue;
    if (u.index < (u.side == 0 ? r.index0 : r.index1)) out.push_back(&u);
  }
  std::sort(out.begin(), out.end(), [](const UnmatchedRecord* a, const UnmatchedRecord* b) { return a->index < b->index; });
  if (out.size() > limit) out.erase(out.begin(), out.end() - static_cast<long>(limit));
  return out;
}

Feeder feederOf(const CompareResult& result, const RecordComparison& r) {
  for (const TensorPair& p : r.tensors) {
    if (!consumes(r, p) || p.verdict != Verdict::Fail) continue;
    for (const UnmatchedRecord& u : result.unmatched) {
      if (u.rank != r.rank || u.step != r.step || u.output_checksum == 0) continue;
      if (u.index >= (u.side == 0 ? r.index0 : r.index1)) continue;
      if (u.output_checksum == (u.side == 0 ? p.stats0.checksum : p.stats1.checksum)) return {&u, &p};
    }
  }
  return {};
}

nlohmann::json metricsJson(const TensorPair& p) {
  const TensorMetrics& m = p.metrics;
  nlohmann::json j = {{"role", format::roleName(p.role)},
                      {"position", p.position},
                      {"item", p.item},
                      {"dtype0", format::dtypeName(p.dtype0)},
                      {"dtype1", format::dtypeName(p.dtype1)},
                      {"shape0", p.shape0},
                      {"shape1", p.shape1},
                      {"compared", m.compared},
                      {"verdict", verdictName(p.verdict)}};
  if (!p.reason.empty()) j["reason"] = p.reason;
  if (!m.mismatch.empty()) j["mismatch"] = m.mismatch;
  if (p.uninitialized) j["uninitialized"] = true;
  if (m.compared) {
    j["level"] = m.from_stats ? 1 : 2;
    j["cosine"] = metric(m, m.cosine);
    j["max_abs"] = metric(m, m.max_abs);
    j["max_rel"] = metric(m, m.max_rel);
    j["mean_abs"] = metric(m, m.mean_abs);
    j["rmse"] = metric(m, m.rmse);
    j["rel_l2"] = metric(m, m.rel_l2);
    j["within_1e3"] = metric(m, m.within_1e3);
    j["within_5e3"] = metric(m, m.within_5e3);
    j["sign_agree"] = metric(m, m.sign_agree);
    j["max_ulp"] = metric(m, m.max_ulp);
    j["nan_mismatch"] = m.nan_mismatch;
    j["inf_mismatch"] = m.inf_mismatch;
    if (m.from_stats) {
      j["stat_error"] = jsonNumber(m.stat_error);
      j["checksum_equal"] = m.checksum_equal;
    }
  }
  return j;
}

nlohmann::json replayJson(const ReplayCheck& c) {
  nlohmann::json j = {{"verdict", replayStateName(c.state)}};
  if (!c.reason.empty()) j["reason"] = c.reason;
  if (c.state == ReplayState::NotReplayable || c.state == ReplayState::MayAmplify) return j;
  j["error_dir1"] = jsonNumber(c.error1);
  j["error_dir1_same_dtype"] = jsonNumber(c.error1_dtype);
  j["cpu_kernel_error"] = jsonNumber(c.cpu_error);
  j["error_dir0"] = jsonNumber(c.error0);
  j["tolerance"] = jsonNumber(c.tolerance);
  if (!c.precision.empty()) {
    j["precision"] = c.precision;
    j["precision_setting"] = c.precision_setting;
    j["precision_error"] = jsonNumber(c.precision_error);
  }
  return j;
}

nlohmann::json recordSummaryJson(const RecordComparison& r, bool with_tensors) {
  nlohmann::json j = {{"name", r.name},
                      {"op", r.op},
                      {"pass", format::passName(r.pass)},
                      {"step", r.step},
                      {"rank", r.rank},
                      {"index0", r.index0},
                      {"index1", r.index1},
                      {"verdict", verdictName(r.verdict)},
                      {"origin", r.origin},
                      {"input_error", jsonNumber(r.input_error)},
                      {"output_error", jsonNumber(r.output_error)},
                      {"location", r.location}};
  if (!r.name1.empty()) j["name1"] = r.name1;
  if (!r.grad_fn.empty()) j["grad_fn"] = r.grad_fn;
  if (r.has_module) j["module"] = r.module;
  if (r.aligned_by_sequence) j["aligned_by_sequence"] = true;
  if (r.replay.state != ReplayState::NotTried) j["replay"] = replayJson(r.replay);
  if (!r.rerecord.empty()) j["rerecord"] = r.rerecord;
  if (with_tensors) {
    j["stack"] = r.stack0;
    nlohmann::json tensors = nlohmann::json::array();
    for (const TensorPair& p : r.tensors) tensors.push_back(metricsJson(p));
    j["tensors"] = tensors;
  }
  return j;
}

nlohmann::json thresholdsJson(const Thresholds& t) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t i = 0; i < kPrecisions; ++i) {
    const Limits& l = t.limits[i];
    j[precisionName(static_cast<Precision>(i))] = {
        {"rel_l2_warn", jsonNumber(l.rel_l2_warn)},   {"rel_l2_fail", jsonNumber(l.rel_l2_fail)},
        {"cosine_warn", jsonNumber(l.cosine_warn)},   {"cosine_fail", jsonNumber(l.cosine_fail)},
        {l.within_5e3 ? "within_5e3_warn" : "within_1e3_warn", jsonNumber(l.within_warn)},
        {"max_abs_fail", jsonNumber(l.max_abs_fail)}, {"max_rel_fail", jsonNumber(l.max_rel_fail)},
        {"max_ulp_fail", jsonNumber(l.max_ulp_fail)}, {"small", jsonNumber(l.small)},
        {"roundoff", jsonNumber(l.roundoff)},         {"kernel_floor_roundoffs", jsonNumber(l.kernel_floor)},
        {"identical_inputs_floor_roundoffs", jsonNumber(l.identical_inputs_floor)}};
  }
  j["origin_factor"] = jsonNumber(t.origin_factor);
  j["kernel_factor"] = jsonNumber(t.kernel_factor);

  return j;
}

nlohmann::json moduleSummaryJson(const ModuleSummary& m) {
  nlohmann::json j = {{"module", m.module},   {"records", m.records},
                      {"warn", m.warn},       {"fail", m.fail},
                      {"origins", m.origins}, {"worst_error", jsonNumber(m.worst_error)},
                      {"worst_record", m.worst_record}};
  if (!m.first_failing.empty()) {
    j["first_failing"] = {{"name", m.first_failing},
                          {"step", m.first_failing_step},
                          {"rank", m.first_failing_rank},
                          {"index", m.first_failing_index}};
  }
  return j;
}

// The gradient map: where the runs' gradients part first, and the cells
// themselves while they are few enough for a summary.
nlohmann::json gradientsJson(const std::vector<GradientRow>& rows) {
  constexpr size_t kMaxCells = 100000;
  nlohmann::json j;
  size_t cells = 0;
  for (const GradientRow& row : rows) cells += row.cells.size();
  j["parameters"] = rows.size();
  j["records"] = cells;
  const GradientPart first = firstFailingGradient(rows);
  if (first.cell) {
    j["first_failing"] = {{"parameter", first.row->parameter},
                          {"rank", first.row->rank},
                          {"step", first.cell->step},
                          {"error", jsonNumber(first.cell->error)},
                          {"sign_agree", jsonNumber(first.cell->sign_agree)}};
  } else {
    j["first_failing"] = nullptr;
  }
  if (cells > kMaxCells) {
    j["rows_left_out"] = "more than " + std::to_string(kMaxCells) + " gradient records: see report.csv";
    return j;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const GradientRow& row : rows) {
    nlohmann::json steps = nlohmann::json::array();
    for (const GradientCell& c : row.cells) {
      steps.push_back({{"step", c.step},
                       {"error", jsonNumber(c.error)},
                       {"sign_agree", std::isnan(c.sign_agree) ? nlohmann::json() : jsonNumber(c.sign_agree)},
                       {"verdict", verdictName(c.verdict)}});
    }
    out.push_back({{"parameter", row.parameter}, {"rank", row.rank}, {"steps", steps}});
  }
  j["rows"] = out;
  return j;
}

nlohmann::json summaryJson(const CompareResult& r, const Thresholds& t, const SummaryContext& context) {
  const CompareCounts c = countResult(r);
  const RecordComparison* first = firstDivergence(r);
  nlohmann::json j;
  j["format"] = "acc-compare-summary";
  j["format_version"] = 1;
  j["dir0"] = r.dir0;
  j["dir1"] = r.dir1;
  const Ending ending = endingOf(r);
  j["divergence"] = ending == Ending::Divergence;
  j["ending"] = ending == Ending::Match ? "match" : ending == Ending::Drift ? "drift" : "divergence";
  j["exit_code"] = context.exit_code;
  j["counts"] = {{"records0", r.records0},
                 {"records1", r.records1},
                 {"matched", c.matched},
                 {"unmatched0", c.unmatched0},
                 {"unmatched1", c.unmatched1},
                 {"records", {{"pass", c.records_pass}, {"warn", c.records_warn}, {"fail", c.records_fail}}},
                 {"tensor_pairs",
                  {{"compared", c.pairs_compared},
                   {"not_compared", c.pairs_not_compared},
                   {"pass", c.pairs_pass},
                   {"warn", c.pairs_warn},
                   {"fail", c.pairs_fail},
                   {"reused", r.pairs_reused}}},
                 {"origins", r.origins.size()},
                 {"bytes_compared", r.bytes_compared},
                 {"peak_held_bytes", r.peak_held_bytes},
                 {"seconds", r.seconds}};
  if (first) {
    j["first_divergence"] = recordSummaryJson(*first, true);
    j["first_divergence"]["inherits_recorded"] = first->inherits_recorded;
    j["first_divergence"]["from_other_ranks"] = first->from_other_ranks;
    if (!first->origin) {
      nlohmann::json before = nlohmann::json::array();
      for (const UnmatchedRecord* u : unmatchedBefore(r, *first)) {
        before.push_back({{"only_in", u->side == 0 ? "DIR0" : "DIR1"}, {"name", u->name}, {"index", u->index}});
      }
      j["first_divergence"]["unmatched_before"] = before;
      if (const Feeder f = feederOf(r, *first); f.record) {
        j["first_divergence"]["fed_by"] = {{"name", f.record->name},
                                           {"only_in", f.record->side == 0 ? "DIR0" : "DIR1"},
                                           {"index", f.record->index},
                                           {"role", format::roleName(f.input->role)},
                                           {"position", f.input->position}};
      }
    }
  } else {
    j["first_divergence"] = nullptr;
  }
  nlohmann::json origins = nlohmann::json::array();
  for (size_t k = 0; k < r.origins.size() && k < kListed; ++k) {
    origins.push_back(recordSummaryJson(recordAt(r, r.origins[k]), false));
  }
  j["origins"] = origins;
  // Candidates replay showed to amplify their inputs' error: not origins.
  nlohmann::json amplifiers = nlohmann::json::array();
  size_t amplifying = 0;
  forEachRecord(r, [&](size_t, const RecordComparison& rc) {
    if (rc.replay.state != ReplayState::Amplifies && rc.replay.state != ReplayState::MayAmplify) return;
    if (amplifying++ < kListed) amplifiers.push_back(recordSummaryJson(rc, false));
  });
  j["amplifiers"] = amplifiers;
  j["counts"]["amplifiers"] = amplifying;
  nlohmann::json unmatched = nlohmann::json::array();
  for (size_t k = 0; k < r.unmatched.size() && k < kListed; ++k) {
    const UnmatchedRecord& u = r.unmatched[k];
    unmatched.push_back({{"only_in", u.side == 0 ? "DIR0" : "DIR1"},
                         {"name", u.name},
                         {"op", u.op},
                         {"step", u.step},
                         {"rank", u.rank},
                         {"index", u.index}});
  }
  j["unmatched"] = unmatched;
  if (r.origins.size() > kListed || r.unmatched.size() > kListed) {
    j["listed_at_most"] = kListed;
  }
  nlohmann::json differ = nlohmann::json::array();
  for (const SettingDifference& d : r.settings_differ) differ.push_back(settingDifferenceJson(d));
  j["settings"] = {{"differ", differ}, {"dir0", r.numerics0}, {"dir1", r.numerics1}};
  nlohmann::json modules = nlohmann::json::array();
  for (const ModuleSummary& m : r.modules) modules.push_back(moduleSummaryJson(m));
  j["modules"] = modules;
  if (!r.gradients.empty()) j["gradients"] = gradientsJson(r.gradients);
  j["thresholds"] = thresholdsJson(t);
  j["op_list"] = context.op_list;
  j["filters"] = context.filters;
  j["problems"] = r.problems;
  j["notes"] = r.notes;
  j["recording_notes"] = r.recording_notes;
  j["replay_stderr"] = {{"lines", r.replay_stderr.lines}, {"first_lines", r.replay_stderr.first}};
  j["reports"] = context.reports;
  return j;
}

}  // namespace acc::analyzer
