// acc-analyzer check DIR -o OUT: is this device's kernel wrong? Every op of
// one level-2 recording runs again on the CPU in float64 (acc-replay
// workers, one per core) on its own recorded inputs; ops whose recorded
// output deviates beyond dtype-aware tolerances are reported with compare's
// reports, DIR0 being the float64 replay and DIR1 the recording.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "analyzer/read/json_fields.h"
#include "analyzer/read/recording_notes.h"
#include "analyzer/judge/check_rows.h"
#include "analyzer/cli/command_line.h"
#include "analyzer/compare/steps.h"
#include "analyzer/cli/commands.h"
#include "analyzer/report/csv_report.h"
#include "analyzer/compare/engine.h"
#include "analyzer/cli/judge_args.h"
#include "analyzer/judge/origins.h"
#include "analyzer/compare/progress.h"
#include "analyzer/report/report_filter.h"
#include "analyzer/report/report_set.h"
#include "analyzer/report/summary.h"
#include "analyzer/read/recording.h"
#include "analyzer/judge/replay_inputs.h"
#include "analyzer/judge/replay_verdict.h"
#include "analyzer/report/report_html.h"
#include "analyzer/report/report_xlsx.h"
#include "analyzer/common/text.h"
#include "replay/pool.h"

namespace acc::analyzer {
namespace {

constexpr const char* kCheckUsage =
    "usage: acc-analyzer check DIR [-o OUT] [options]\n"
    "\n"
    "Is this device's kernel wrong? Runs every op of one level-2 recording\n"
    "(ACC_LEVEL=2) again on the CPU, on its own recorded inputs, in float64\n"
    "(and in the recorded dtypes), and reports the ops whose recorded output\n"
    "deviates from the float64 replay beyond the dtype's tolerance and beyond\n"
    "FACTOR times what the CPU kernel in the same dtype shows on those inputs.\n"
    "No reference run is needed. Backward records replay their forward op and\n"
    "autograd on the recorded incoming gradients. Random ops, collectives and\n"
    "ops without a CPU kernel cannot be replayed: they are counted, with why.\n"
    "DIR may be an msprobe dump, read as a recording (as by compare); its\n"
    "entries name Python APIs, which cannot be replayed.\n"
    "docs/METRICS.md (\"Replay\", \"check\") gives the rules.\n"
    "\n"
    "Output, in OUT (default ./acc_check): summary.json, report.csv,\n"
    "report.xlsx, report.html, as compare writes them, DIR0 being the float64\n"
    "replay and DIR1 the recording; the first deviating op is the first\n"
    "divergence.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT       report directory (created; files are overwritten)\n"
    "  --json                 print summary.json on stdout instead of the verdict\n"
    "  --progress             progress lines on stderr even when it is not a\n"
    "                         terminal (a log); a terminal always gets the bar\n"
    "  --op-list A,B          check only ops whose name contains one of these\n"
    "  --only-failed          report only failing tensor pairs\n"
    "  --threads N            replay workers (default: one per core)\n"
    "  --kernel-factor K      deviating: error against float64 > K x the CPU\n"
    "                         kernel's in the same dtypes (4) and > the floor\n"
    "  --kernel-floor V       ... > V units of roundoff of the dtype (bf16 5,\n"
    "                         fp16 5, fp32 32, fp64 32; fp32=40,bf16=6 sets some)\n"
    "  --fail-rel-l2 V ...    the thresholds of compare (acc-analyzer compare\n"
    "                         --help), judged at the recorded dtype\n"
    "  -h, --help             this text\n"
    "\n"
    "Exit codes: 0 every replayed op reproduces its output; 1 an op deviates;\n"
    "2 usage or input error (no recording, no replay stage, damaged records).\n";

struct Args : JudgeArgs {
  std::string dir;
};

// Items read ahead of the workers, at most `capacity` at once.
class ItemQueue {
 public:
  explicit ItemQueue(size_t capacity) : capacity_(capacity) {}
  void push(ReplayItem&& item) {
    std::unique_lock<std::mutex> lock(mu_);
    room_.wait(lock, [&] { return items_.size() < capacity_; });
    items_.push_back(std::move(item));
    ready_.notify_one();
  }
  void close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    ready_.notify_all();
  }
  std::optional<ReplayItem> pop() {
    std::unique_lock<std::mutex> lock(mu_);
    ready_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) return std::nullopt;
    ReplayItem item = std::move(items_.front());
    items_.pop_front();
    room_.notify_one();
    return item;
  }

 private:
  std::mutex mu_;
  std::condition_variable ready_, room_;
  std::deque<ReplayItem> items_;
  size_t capacity_;
  bool closed_ = false;
};

// Replays one rank; its records go to `rows` (and its spill part) in execution order.
void checkRank(const RankRecording& rank, const Args& a, replay::Pool& pool, CompareProgress& progress,
               const std::function<void()>& tick, std::vector<std::string>& problems,
               std::map<std::string, uint64_t>& why_not, CheckRows& rows) {
  ItemQueue queue(2 * pool.workers());
  std::map<uint64_t, format::StackRecord> stacks;
  std::exception_ptr failure;
  ReadDamage damage;
  std::thread reader([&] {
    try {
      damage = forEachReplayItem(
          rank,
          [&](const format::OpRecord& m) {
            return m.op != format::kGradientOp && opSelected(a.op_list, m.op, m.name, m.grad_fn);
          },
          [&](ReplayItem&& item) { queue.push(std::move(item)); }, &stacks);
    } catch (...) {
      failure = std::current_exception();
    }
    queue.close();
  });
  std::map<uint64_t, std::pair<size_t, ReplayItem>> waiting;  // id -> (slot, item without its request)
  auto finish = [&](size_t slot, const ReplayItem& item, const replay::Outcome& o) {
    RecordComparison& r = rows.at(slot);
    checkByReplay(r, item, o, a.thresholds);
    if (r.replay.state == ReplayState::NotReplayable) ++why_not[r.replay.reason];
    if (r.verdict != Verdict::Pass || r.origin) {
      auto it = stacks.find(item.recorded.stack_id);
      if (it != stacks.end()) {
        for (const format::StackFrame& f : it->second.frames) r.stack0.push_back(f.text);
        r.location = userLocation(r.stack0);
      }
    }
    ++progress.pairs_done;
    for (const format::Tensor& t : item.recorded.tensors) progress.bytes_done += t.data.size();
    rows.done(slot);
    tick();
  };
  uint64_t next_id = 0;
  pool.run(
      [&]() -> std::optional<std::pair<uint64_t, replay::Request>> {
        while (std::optional<ReplayItem> item = queue.pop()) {
          const RecordMeta meta = recordMeta(item->recorded);
          const size_t slot = rows.add(describePair(meta, meta, rank.rank));
          if (!item->not_replayable.empty()) {
            finish(slot, *item, replay::Outcome());
            continue;
          }
          const uint64_t id = next_id++;
          replay::Request request = std::move(item->request);
          waiting.emplace(id, std::make_pair(slot, std::move(*item)));
          return std::make_pair(id, std::move(request));
        }
        return std::nullopt;
      },
      [&](uint64_t id, replay::Outcome&& o) {
        auto it = waiting.find(id);
        finish(it->second.first, it->second.second, o);
        waiting.erase(it);
      });
  reader.join();
  if (failure) std::rethrow_exception(failure);
  if (damage.any()) problems.push_back(damage.describe(rank.dir + "/records.acc"));
  rows.finish();
}

void printVerdict(const CompareResult& r, const std::map<std::string, uint64_t>& why_not,
                  const std::vector<std::string>& reports) {
  uint64_t replayed = 0, reproduced = 0, deviating = 0, not_replayable = 0;
  std::map<std::string, uint64_t> reduced;  // "tf32, allowed by X" -> ops judged at it
  forEachRecord(r, [&](size_t, const RecordComparison& rc) {
    if (!rc.replay.precision.empty()) ++reduced[rc.replay.precision + ", which " + rc.replay.precision_setting + " allows"];
    not_replayable += rc.replay.state == ReplayState::NotReplayable;
    replayed += rc.replay.state == ReplayState::Reproduced || rc.replay.state == ReplayState::Confirmed;
    reproduced += rc.replay.state == ReplayState::Reproduced;
    deviating += rc.replay.state == ReplayState::Confirmed;
  });
  std::ostringstream o;
  const RecordComparison* first = r.firstOrigin();
  if (first) {
    o << "acc-analyzer check: WRONG KERNEL, first deviating op:\n  " << first->name << "  step " << first->step
      << ", rank " << first->rank << (first->grad_fn.empty() ? "" : ", " + first->grad_fn) << "\n";
    for (const TensorPair& p : first->tensors) {
      if (p.verdict != Verdict::Fail) continue;
      o << "    " << format::roleName(p.role) << "[" << p.position << "] " << format::dtypeName(p.dtype1) << " "
        << shapeText(p.shape1) << ": " << p.reason << "\n";
    }
    o << "    its output is " << numberText(first->replay.error1, "%.3g")
      << " off the float64 replay of its own inputs; the CPU kernel in the same dtype: "
      << numberText(first->replay.cpu_error, "%.3g") << "\n";
    if (!first->replay.precision.empty()) {
      o << "    judged at " << first->replay.precision << " (" << first->replay.precision_setting
        << "): its products alone are " << numberText(first->replay.precision_error, "%.3g") << " off\n";
    }
    if (!first->location.empty()) o << "    at " << first->location << "\n";
    if (deviating > 1) o << "  " << (deviating - 1) << " more deviating op(s) in the reports\n";
  } else {
    o << "acc-analyzer check: no wrong kernel: every replayed op reproduces its recorded output\n";
  }
  o << "  " << recordCount(r) << " records: " << replayed << " replayed (" << reproduced << " reproduce, "
    << deviating << " deviate), " << not_replayable << " not replayable\n";
  for (const auto& [how, n] : reduced) o << "    " << n << " matmul/conv op(s) judged at " << how << "\n";
  size_t shown = 0;
  for (const auto& [why, n] : why_not) {
    if (shown++ == 5) {
      o << "    ... (summary.json: not_replayable)\n";
      break;
    }
    o << "    " << n << " not replayable: " << why << "\n";
  }
  if (!reports.empty()) {
    o << "  reports:";
    for (const std::string& path : reports) o << " " << path;
    o << "\n";
  }
  std::cout << o.str();
}

}  // namespace

int checkCommand(const std::vector<std::string>& argv) {
  Args a;
  a.out = "acc_check";
  CommandLine cli("check", kCheckUsage);
  addJudgeOptions(cli.app(), a);
  if (std::optional<int> done = cli.parse(argv)) return *done;
  if (a.positional.size() != 1) {
    std::cerr << "acc-analyzer check: one recording directory expected, got " << a.positional.size() << "\n\n" << kCheckUsage;
    return kExitInput;
  }
  a.dir = a.positional[0];
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  const auto start = std::chrono::steady_clock::now();
  std::vector<RankRecording> ranks;
  try {
    ranks = openRecording(a.dir);
  } catch (const InputError& e) {
    std::cerr << "acc-analyzer: " << e.what() << "\n";
    return kExitInput;
  }
  const unsigned threads = a.threads ? a.threads : std::max(1u, std::thread::hardware_concurrency());
  replay::Pool pool(replay::defaultWorkerPath(), threads);
  if (!pool.unavailable().empty()) {
    std::cerr << "acc-analyzer check: " << pool.unavailable() << "\n";
    return kExitInput;
  }
  CompareResult result;
  result.dir0 = "float64 replay of " + a.dir;
  result.dir1 = a.dir;
  result.numerics1 = objectField(ranks.front().manifest, "numerics");
  result.recording_notes = recordingNotes(ranks);
  for (const std::string& n : result.recording_notes) std::cerr << "acc-analyzer: " << n << "\n";
  ProgressReporter reporter(stderr, "check", a.progress);
  CompareProgress progress;
  progress.action = "replaying";
  for (const RankRecording& r : ranks) progress.pairs_total += expectedRecords(r);
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  auto tick = [&] {
    progress.seconds = elapsed();
    if (progress.pairs_done > progress.pairs_total) progress.pairs_total = progress.pairs_done;
    reporter.update(progress);
  };
  std::map<std::string, uint64_t> why_not;
  // The judged rows are spilled beside the reports while check runs.
  std::error_code ec;
  std::filesystem::create_directories(a.out, ec);
  auto spill = std::make_shared<RecordSpill>(std::filesystem::is_directory(a.out) ? a.out : "");
  try {
    for (const RankRecording& rank : ranks) {
      CheckRows rows(spill->addPart());
      checkRank(rank, a, pool, progress, tick, result.problems, why_not, rows);
      const size_t offset = result.records0;
      result.records0 += rows.records;
      result.tensors_compared += rows.tensors_compared;
      for (size_t o : rows.origins) {
        if (rows.kept.count(o)) result.origins.push_back(offset + o);
      }
      result.origins_not_kept += rows.origins_not_kept;
      for (auto& [position, record] : rows.kept) result.kept.emplace(offset + position, std::move(record));
      if (rows.first_failing != SIZE_MAX &&
          (result.first_failing == SIZE_MAX ||
           comesFirst(result.kept.at(offset + rows.first_failing), result.kept.at(result.first_failing)))) {
        result.first_failing = offset + rows.first_failing;
      }
    }
  } catch (const std::exception& e) {  // InputError, or the spill's disk
    reporter.finish();
    std::cerr << "acc-analyzer: " << e.what() << "\n";
    return kExitInput;
  }
  result.spill = spill;
  result.replay_stderr = pool.workerStderr();
  result.records1 = result.records0;
  result.bytes_compared = progress.bytes_done;
  sortOrigins(result);
  result.steps = summarizeSteps(result);
  result.seconds = elapsed();
  const int exit_code = !result.problems.empty() ? kExitInput : result.origins.empty() ? kExitOk : kExitFound;

  WrittenReports reports;
  auto checkKeys = [&](nlohmann::json& summary) {
    summary["format"] = "acc-check-summary";
    summary["not_replayable"] = why_not;
  };
  CompareProgress writing;
  writing.writing = true;
  auto writingTick = [&](size_t done, size_t total) {
    writing.pairs_done = done;
    writing.pairs_total = total;
    writing.seconds = elapsed();
    reporter.update(writing);
  };
  const std::string err = writeReports(a, result, exit_code, checkKeys, reports, writingTick);
  reporter.finish();
  for (const std::string& p : result.problems) std::cerr << "acc-analyzer: " << p << "\n";
  if (!err.empty()) {
    std::cerr << "acc-analyzer: " << err << "\n";
    return kExitInput;
  }
  if (a.json) {
    std::cout << reports.summary.dump(2) << "\n";
  } else {
    printVerdict(result, why_not, reports.paths);
  }
  std::cout.flush();
  return exit_code;
}

}  // namespace acc::analyzer
