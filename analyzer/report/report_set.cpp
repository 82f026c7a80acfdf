#include "analyzer/report/report_set.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>

#include "analyzer/report/csv_report.h"
#include "analyzer/report/report_filter.h"
#include "analyzer/report/summary.h"
#include "analyzer/report/report_html.h"
#include "analyzer/report/report_xlsx.h"

namespace acc::analyzer {

std::string writeReports(const JudgeArgs& args, const CompareResult& result, int exit_code,
                         const std::function<void(nlohmann::json&)>& extend, WrittenReports& out,
                         const std::function<void(size_t, size_t)>& tick) {
  namespace fs = std::filesystem;
  const fs::path dir(args.out);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) return "cannot create the report directory " + args.out + ": " + ec.message();
  const std::string summary = (dir / "summary.json").string(), csv = (dir / "report.csv").string(),
                    xlsx = (dir / "report.xlsx").string(), html = (dir / "report.html").string();
  out.paths = {summary, csv, xlsx, html};
  SummaryContext context;
  context.exit_code = exit_code;
  context.filters = args.filter.describe();
  context.op_list = args.op_list;
  context.reports = {{"summary", summary}, {"csv", csv}, {"xlsx", xlsx}, {"html", html}};
  if (args.filter.active()) out.shown = filterResult(result, args.filter);
  const CompareResult& rows = args.filter.active() ? out.shown : result;
  // Each writer reads the spilled rows on its own: together they take the
  // time of the slowest instead of the sum (seconds each at a million rows).
  std::string errors[3];
  std::atomic<size_t> done{0};
  auto guarded = [&](int k, auto write, const std::string& path) {
    return std::thread([&errors, &done, k, write, &rows, path] {
      try {
        write(rows, path);
      } catch (const std::exception& e) {
        errors[k] = e.what();
      }
      ++done;
    });
  };
  std::thread writers[] = {guarded(0, writeCsvReport, csv), guarded(1, writeXlsxReport, xlsx),
                           guarded(2, writeHtmlReport, html)};
  constexpr size_t kWriters = std::size(writers);
  while (tick && done.load() < kWriters) {
    tick(done.load(), kWriters);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (std::thread& t : writers) t.join();
  // Written last, so that its peak memory includes the other reports'.
  out.summary = summaryJson(result, args.thresholds, context);
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    out.summary["counts"]["peak_memory_bytes"] = static_cast<uint64_t>(usage.ru_maxrss) * 1024;
  }
  if (extend) extend(out.summary);
  std::ofstream s(summary, std::ios::trunc);
  s << out.summary.dump(2) << "\n";
  if (!s) return summary + ": cannot write";
  for (const std::string& e : errors) {
    if (!e.empty()) return e;
  }
  return "";
}

void sortOrigins(CompareResult& result) {
  std::stable_sort(result.origins.begin(), result.origins.end(), [&](size_t x, size_t y) {
    const RecordComparison& a = recordAt(result, x);
    const RecordComparison& b = recordAt(result, y);
    return std::tie(a.step, a.index0, a.rank) < std::tie(b.step, b.index0, b.rank);
  });
}

}  // namespace acc::analyzer
