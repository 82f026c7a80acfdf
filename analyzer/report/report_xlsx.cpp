#include "analyzer/report/report_xlsx.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <deque>
#include <cstdlib>
#include <stdexcept>

#include "analyzer/report/columns.h"
#include "analyzer/report/record_error.h"
#include "analyzer/common/text.h"
#include "analyzer/report/xlsx_workbook.h"

namespace acc::analyzer {
namespace {

XlsxStyle rowStyle(Verdict v, bool bold) {
  switch (v) {
    case Verdict::Fail: return bold ? XlsxStyle::FailBold : XlsxStyle::Fail;
    case Verdict::Warn: return bold ? XlsxStyle::WarnBold : XlsxStyle::Warn;
    case Verdict::Pass: break;
  }
  return bold ? XlsxStyle::Bold : XlsxStyle::Normal;
}

// Numeric columns hold numbers; "nan", "inf" and empty cells stay text/empty.
XlsxCell cell(const std::string& text, ColumnType type) {
  if (type != ColumnType::Text && !text.empty()) {
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (errno == 0 && end == text.c_str() + text.size() && std::isfinite(v)) return XlsxCell::num(v);
  }
  return XlsxCell::str(text);
}

double columnWidth(const std::string& name, ColumnType type) {
  if (name == "name") return 34;
  if (name == "op") return 24;
  if (name == "module") return 24;
  if (name == "mismatch") return 30;
  if (name.rfind("shape", 0) == 0) return 14;
  if (name == "dtype0" || name == "dtype1") return 10;
  if (type == ColumnType::Number) return 12;
  return 9;
}

// Which tensor pairs the tensors sheet holds: every one of a comparison
// that fits, else what a person reads in Excel: kContext records before and
// after each origin, and the records that fail or warn up to kFailingRows
// rows (once two runs part, nearly every later record fails: a million such
// rows take a minute to write and nobody scrolls them; the steps sheet says
// where they are). report.csv has them all.
struct Selection {
  bool all = true;
  uint64_t rows = 0, shown = 0, left_out = 0;
  uint64_t failing_left_out = 0;  // failing or warning pairs beyond kFailingRows
};

constexpr uint64_t kAllRows = 50000;
constexpr uint64_t kFailingRows = 100000;
constexpr size_t kContext = 10;

void tensorSheet(const CompareResult& result, XlsxWorkbook& sheet, Selection& selection) {
  const std::vector<Column>& columns = reportColumns();
  std::vector<XlsxCell> header;
  std::vector<double> widths;
  for (const Column& c : columns) {
    header.push_back(XlsxCell::str(c.name));
    widths.push_back(columnWidth(c.name, c.type));
  }
  // The header row frozen; index and name stay visible when scrolling right.
  sheet.addSheet("tensors", widths, 1, 2);
  sheet.addRow(header, XlsxStyle::Header);
  forEachRecord(result, [&](size_t, const RecordComparison& r) { selection.rows += r.tensors.size(); });
  selection.all = selection.rows <= kAllRows;
  std::vector<XlsxCell> cells(columns.size());
  auto write = [&](const RecordComparison& r) {
    for (const TensorPair& p : r.tensors) {
      std::vector<std::string> row = reportRow(r, p);
      for (size_t i = 0; i < columns.size() && i < row.size(); ++i) cells[i] = cell(row[i], columns[i].type);
      if (sheet.addRow(cells, rowStyle(p.verdict, r.origin))) ++selection.shown;
    }
  };
  std::deque<RecordComparison> before;  // records not written, for the next origin's context
  size_t after = 0;                     // records still to write after the last origin
  forEachRecord(result, [&](size_t, const RecordComparison& r) {
    if (selection.all) return write(r);
    if (r.origin) {
      for (const RecordComparison& b : before) {
        if (b.verdict != Verdict::Pass) selection.failing_left_out -= b.tensors.size();
        write(b);
      }
      before.clear();
      after = kContext;
    }
    if (r.origin || after > 0) {
      if (!r.origin) --after;
      return write(r);
    }
    if (r.verdict != Verdict::Pass) {
      if (selection.shown < kFailingRows) return write(r);
      selection.failing_left_out += r.tensors.size();  // unless the next origin's context
    }
    before.push_back(r);
    if (before.size() > kContext) before.pop_front();
  });
  selection.left_out = selection.rows - selection.shown;
  if (!selection.all || selection.left_out) {
    std::vector<XlsxCell> note(columns.size());
    note[1] = XlsxCell::str(std::to_string(selection.left_out) + " of " + std::to_string(selection.rows) +
                            " tensor pairs not in this sheet: report.csv holds every one (sheet \"about\")");
    sheet.addRow(note, XlsxStyle::Bold);
  }
}

// Per step and rank: where two runs part in a long run.
void stepSheet(const CompareResult& result, XlsxWorkbook& sheet) {
  sheet.addSheet("steps", {6, 6, 9, 7, 7, 8, 14, 14, 34}, 1, 2);
  std::vector<XlsxCell> header;
  for (const char* name : {"rank", "step", "records", "fail", "warn", "origins", "worst fwd error", "worst bwd error",
                           "first failing record"}) {
    header.push_back(XlsxCell::str(name));
  }
  sheet.addRow(header, XlsxStyle::Header);
  for (const StepSummary& s : result.steps) {
    sheet.addRow({XlsxCell::num(static_cast<double>(s.rank)), XlsxCell::num(static_cast<double>(s.step)),
                  XlsxCell::num(static_cast<double>(s.records)), XlsxCell::num(static_cast<double>(s.fail)),
                  XlsxCell::num(static_cast<double>(s.warn)), XlsxCell::num(static_cast<double>(s.origins)),
                  std::isnan(s.worst_forward) ? XlsxCell() : XlsxCell::num(s.worst_forward),
                  std::isnan(s.worst_backward) ? XlsxCell() : XlsxCell::num(s.worst_backward),
                  XlsxCell::str(s.first_failing)},
                 rowStyle(s.fail ? Verdict::Fail : s.warn ? Verdict::Warn : Verdict::Pass, false));
  }
}

// What the workbook holds, and where the rest is.
void aboutSheet(const CompareResult& result, const Selection& selection, XlsxWorkbook& sheet) {
  sheet.addSheet("about", {110}, 0, 0);
  auto line = [&](const std::string& text) { sheet.addRow({XlsxCell::str(text)}); };
  line("acc-analyzer: " + result.dir0 + " (DIR0) against " + result.dir1 + " (DIR1)");
  if (selection.all) {
    line("tensors: every tensor pair (" + std::to_string(selection.rows) + "), in execution order");
  } else {
    line("tensors: " + std::to_string(kContext) + " records before and after each origin, and the records that fail "
         "or warn up to " + std::to_string(kFailingRows) + " rows: " + std::to_string(selection.shown) + " of " +
         std::to_string(selection.rows) + " tensor pairs, in execution order");
  }
  if (selection.failing_left_out) {
    line(std::to_string(selection.failing_left_out) + " failing or warning tensor pairs after the first " +
         std::to_string(kFailingRows) + " rows are left out: the steps sheet says which steps fail, report.csv "
         "holds them (acc-analyzer compare --only-failed writes only those)");
  }
  if (selection.left_out) {
    line(std::to_string(selection.left_out) + " tensor pairs are not in this workbook: report.csv (beside it) holds "
         "every pair, and report.html every record");
  }
  line("origins: every origin kept (" + std::to_string(result.origins.size()) + ")" +
       (result.origins_not_kept ? "; " + std::to_string(result.origins_not_kept) + " more in report.csv" : ""));
  line("steps: every step of every rank (" + std::to_string(result.steps.size()) + "): records, failures, the worst "
       "error of its forward and backward records");
  if (!result.modules.empty()) line("modules: every nn.Module path (" + std::to_string(result.modules.size()) + ")");
  if (!result.unmatched.empty()) {
    line("unmatched: records without a partner (" + std::to_string(result.unmatched.size()) + ")");
  }
  for (const std::string& f : result.filters) line("filter: " + f);
}

void originSheet(const CompareResult& result, XlsxWorkbook& sheet) {
  std::vector<XlsxCell> header;
  for (const char* name : {"name", "op", "pass", "step", "rank", "index", "worst tensor", "cosine", "max_abs",
                           "max_rel", "rel_l2", "input_error", "output_error", "verdict", "stack top frame"}) {
    header.push_back(XlsxCell::str(name));
  }
  sheet.addSheet("origins", {34, 24, 6, 6, 6, 8, 14, 12, 12, 12, 12, 12, 12, 8, 70}, 1, 1);
  sheet.addRow(header, XlsxStyle::Header);
  for (size_t index : result.origins) {
    const RecordComparison& r = recordAt(result, index);
    const TensorPair* worst = worstPair(r);
    auto metric = [&](double TensorMetrics::*field) {
      return worst ? XlsxCell::num(worst->metrics.*field) : XlsxCell();
    };
    std::string tensor;
    if (worst) {
      tensor = std::string(format::roleName(worst->role)) + "[" + std::to_string(worst->position) +
               (worst->item ? "." + std::to_string(worst->item) : "") + "]";
    }
    sheet.addRow({XlsxCell::str(r.name), XlsxCell::str(r.op), XlsxCell::str(format::passName(r.pass)),
                  XlsxCell::num(static_cast<double>(r.step)), XlsxCell::num(static_cast<double>(r.rank)),
                  XlsxCell::num(static_cast<double>(r.index0)), XlsxCell::str(tensor),
                  metric(&TensorMetrics::cosine), metric(&TensorMetrics::max_abs), metric(&TensorMetrics::max_rel),
                  metric(&TensorMetrics::rel_l2), XlsxCell::num(r.input_error), XlsxCell::num(r.output_error),
                  XlsxCell::str(verdictName(r.verdict)), XlsxCell::str(r.stack0.empty() ? "" : r.stack0.front())},
                 rowStyle(r.verdict, false));
  }
}

void unmatchedSheet(const CompareResult& result, XlsxWorkbook& sheet) {
  sheet.addSheet("unmatched", {8, 34, 24, 6, 6, 8}, 1, 0);
  sheet.addRow({XlsxCell::str("only in"), XlsxCell::str("name"), XlsxCell::str("op"), XlsxCell::str("step"),
                XlsxCell::str("rank"), XlsxCell::str("index")},
               XlsxStyle::Header);
  for (const UnmatchedRecord& u : result.unmatched) {
    sheet.addRow({XlsxCell::str(u.side == 0 ? "DIR0" : "DIR1"), XlsxCell::str(u.name), XlsxCell::str(u.op),
                  XlsxCell::num(static_cast<double>(u.step)), XlsxCell::num(static_cast<double>(u.rank)),
                  XlsxCell::num(static_cast<double>(u.index))});
  }
}

void moduleSheet(const CompareResult& result, XlsxWorkbook& sheet) {
  sheet.addSheet("modules", {34, 8, 6, 6, 8, 12, 34, 34, 6}, 1, 1);
  std::vector<XlsxCell> header;
  for (const char* name : {"module", "records", "fail", "warn", "origins", "worst error", "worst record",
                           "first failing record", "its step"}) {
    header.push_back(XlsxCell::str(name));
  }
  sheet.addRow(header, XlsxStyle::Header);
  for (const ModuleSummary& m : result.modules) {
    const bool failing = !m.first_failing.empty();
    sheet.addRow({XlsxCell::str(moduleLabel(m.module)), XlsxCell::num(static_cast<double>(m.records)),
                  XlsxCell::num(static_cast<double>(m.fail)), XlsxCell::num(static_cast<double>(m.warn)),
                  XlsxCell::num(static_cast<double>(m.origins)),
                  std::isfinite(m.worst_error) ? XlsxCell::num(m.worst_error) : XlsxCell::str(numberText(m.worst_error)),
                  XlsxCell::str(m.worst_record), XlsxCell::str(m.first_failing),
                  failing ? XlsxCell::num(static_cast<double>(m.first_failing_step)) : XlsxCell()},
                 rowStyle(m.fail ? Verdict::Fail : m.warn ? Verdict::Warn : Verdict::Pass, false));
  }
}

}  // namespace

void writeXlsxReport(const CompareResult& result, const std::string& path) {
  XlsxWorkbook book(path);
  Selection selection;
  tensorSheet(result, book, selection);
  originSheet(result, book);
  if (!result.steps.empty()) stepSheet(result, book);
  if (!result.modules.empty()) moduleSheet(result, book);
  if (!result.unmatched.empty()) unmatchedSheet(result, book);
  aboutSheet(result, selection, book);
  book.close();
  if (book.rowsLeftOut()) {
    std::fprintf(stderr, "acc-analyzer: %s holds Excel's limit of %u rows a sheet; %llu rows left out (report.csv holds every row)\n",
                 path.c_str(), kXlsxMaxRows, static_cast<unsigned long long>(book.rowsLeftOut()));
  }
}

}  // namespace acc::analyzer
