// report.html in about 520 lines: one self-contained page is written in
// one pass (sections in page order, no template engine), so the file reads
// top to bottom as the page does; its stylesheet and script are
// report_html_assets.h, its plot report_plot.h.
#include "analyzer/report/report_html.h"
#include "analyzer/common/text.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "analyzer/report/columns.h"
#include "analyzer/compare/gradients.h"
#include "analyzer/report/markup.h"
#include "analyzer/report/record_error.h"
#include "analyzer/report/report_html_assets.h"
#include "analyzer/report/report_plot.h"

namespace acc::analyzer {
namespace {

constexpr size_t kStackPreview = 5;     // frames shown in the verdict
constexpr size_t kMaxListed = 500;      // later origins, unmatched records

std::string esc(std::string_view s) { return escapeMarkup(s); }
std::string tensorLabel(const TensorPair& p) {
  return std::string(format::roleName(p.role)) + "[" + std::to_string(p.position) +
         (p.item ? "." + std::to_string(p.item) : "") + "]";
}
// JSON inside <script>: no '<', '>' or '&' outside escapes, so nothing can
// close the element.
std::string scriptJson(const nlohmann::json& j) {
  std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

nlohmann::json cellJson(const std::string& text, ColumnType type) {
  if (text.empty()) return nullptr;
  if (type != ColumnType::Text) {
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (errno == 0 && end == text.c_str() + text.size() && std::isfinite(v)) return v;
  }
  return text;
}

std::string secondsText(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

struct Counts {
  size_t pairs = 0, pairs_fail = 0, pairs_warn = 0, records_fail = 0, records_warn = 0;
};

Counts count(const CompareResult& result) {
  Counts c;
  forEachRecord(result, [&](size_t, const RecordComparison& r) {
    c.records_fail += r.verdict == Verdict::Fail;
    c.records_warn += r.verdict == Verdict::Warn;
    for (const TensorPair& p : r.tensors) {
      ++c.pairs;
      c.pairs_fail += p.verdict == Verdict::Fail;
      c.pairs_warn += p.verdict == Verdict::Warn;
    }
  });
  return c;
}

std::string metricsRows(const TensorPair& p) {
  const TensorMetrics& m = p.metrics;
  std::string s = "<tr><th>worst tensor</th><td>" + esc(tensorLabel(p)) + " " + format::dtypeName(p.dtype0) +
                  " / " + format::dtypeName(p.dtype1) + " " + esc(shapeText(p.shape0)) + " (" +
                  verdictName(p.verdict) + (m.from_stats ? ", compared on statistics" : "") + ")</td></tr>";
  s += "<tr><th>metrics</th><td>cosine " + numberText(m.cosine) + " &middot; max_abs " + numberText(m.max_abs) +
       " &middot; max_rel " + numberText(m.max_rel) + " &middot; rel_l2 " + numberText(m.rel_l2) +
       " &middot; within 1e-3 " + numberText(m.within_1e3) + " &middot; max_ulp " + numberText(m.max_ulp);
  if (m.nan_mismatch || m.inf_mismatch) {
    s += " &middot; NaN mismatches " + std::to_string(m.nan_mismatch) + ", Inf mismatches " +
         std::to_string(m.inf_mismatch);
  }
  return s + "</td></tr>";
}

std::string verdictSection(const CompareResult& result, const Counts& c) {
  const RecordComparison* focus = focusRecord(result);
  const char* cls = focus ? "fail" : c.pairs_warn ? "warn" : "pass";
  std::string s = std::string("<section id=\"verdict\" class=\"") + cls + "\">";
  if (focus == nullptr) {
    s += c.pairs_warn ? "<h2>No divergence: " + std::to_string(c.pairs_warn) + " tensor pair(s) with warnings</h2>"
                      : std::string("<h2>No divergence: every tensor pair passes</h2>");
  } else {
    s += std::string("<h2>") + (focus->origin ? "Divergence starts at " : "Divergence without a clear origin; first failing record: ") +
         "<span class=\"headline-name\">" + esc(focus->name) + "</span></h2><table class=\"kv\">";
    s += "<tr><th>op</th><td><code>" + esc(focus->op) + "</code>" +
         (focus->grad_fn.empty() ? "" : " (" + esc(focus->grad_fn) + ")") + "</td></tr>";
    if (focus->has_module) {
      s += "<tr><th>module</th><td><code>" + esc(moduleLabel(focus->module)) +
           "</code></td></tr>";
    }
    s += "<tr><th>where</th><td>" + std::string(format::passName(focus->pass)) + " pass, step " +
         std::to_string(focus->step) + ", rank " + std::to_string(focus->rank) + ", record " +
         std::to_string(focus->index0) + " in DIR0, " + std::to_string(focus->index1) + " in DIR1</td></tr>";
    if (const TensorPair* worst = worstPair(*focus)) s += metricsRows(*worst);
    s += "<tr><th>error added</th><td>inputs " + numberText(focus->input_error) + " &rarr; outputs " +
         numberText(focus->output_error) + "</td></tr></table>";
    if (!focus->stack0.empty()) {
      s += "<div>called from:</div><ol class=\"stack\">";
      for (size_t i = 0; i < focus->stack0.size() && i < kStackPreview; ++i) s += "<li>" + esc(focus->stack0[i]) + "</li>";
      s += "</ol>";
      if (focus->stack0.size() > kStackPreview) s += "<div class=\"note\">full stack below</div>";
    }
  }
  s += "<div class=\"counts\">" + std::to_string(recordCount(result)) + " records compared (" +
       std::to_string(c.records_fail) + " fail, " + std::to_string(c.records_warn) + " warn), " +
       std::to_string(c.pairs) + " tensor pairs (" + std::to_string(c.pairs_fail) + " fail, " +
       std::to_string(c.pairs_warn) + " warn), " + std::to_string(result.origins.size()) + " origin(s), " +
       std::to_string(result.unmatched.size()) + " unmatched record(s); " +
       bytesText(static_cast<double>(result.bytes_compared)) + " of tensor data in " +
       secondsText(result.seconds) + "</div>";
  if (!result.problems.empty()) {
    s += "<div class=\"counts\"><b>" + std::to_string(result.problems.size()) +
         " problem(s) reading the recordings</b>: see <a href=\"#problems\">below</a></div>";
  }
  return s + "</section>";
}

// The numeric settings that differ between the runs, above everything else.
std::string settingsSection(const CompareResult& result) {
  if (result.settings_differ.empty()) return "";
  std::string s = "<section id=\"settings\" class=\"warn\"><h2>The runs' numeric settings differ: check these first</h2>"
                  "<table class=\"kv\"><tr><th>setting</th><th>DIR0</th><th>DIR1</th></tr>";
  for (const SettingDifference& d : result.settings_differ) {
    s += "<tr><td><code>" + esc(d.setting) + "</code></td><td>" + esc(settingText(d.dir0)) + "</td><td>" +
         esc(settingText(d.dir1)) + "</td></tr>";
  }
  return s + "</table></section>";
}

// A long run's first view: where, step by step, the runs part.
std::string overviewSection(const CompareResult& result) {
  if (result.steps.size() < 2) return "";
  return "<section id=\"overview\"><h2>Worst error per step</h2>" + stepsOverviewSvg(result) +
         "<div class=\"note\">Each point is one step's worst relative error among its forward records (blue) and its "
         "backward records (orange), over every rank. Click a step to show its records below.</div></section>";
}

// Past this many tensor pairs the rows leave the page: report_rows/ beside
// it holds them, and the page loads the steps asked for.
constexpr uint64_t kInlinePairs = 50000;
constexpr size_t kChunkRecords = 2000;   // records per file of report_rows/
constexpr size_t kMaxShownRecords = 20000;  // records one view plots and lists

std::string plotSection(const CompareResult& result, bool large) {
  if (large) {
    return "<section id=\"plot\"><h2>Error along execution order, by steps</h2><div class=\"controls\">"
           "<label>rank <select id=\"zoom-rank\"></select></label> <label>steps <input id=\"zoom-from\" "
           "type=\"number\" min=\"0\"> to <input id=\"zoom-to\" type=\"number\" min=\"0\"></label> "
           "<button id=\"zoom-show\">show</button><span id=\"zoom-info\" class=\"note\"></span></div>"
           "<div id=\"zoom-plot\"></div><div class=\"note\">This comparison has too many records for one page: "
           "choose the steps to plot and list (at most " + std::to_string(kMaxShownRecords) +
           " records; the first failing step is shown first). They are read from report_rows/ beside this file; "
           "report.csv holds every row.</div></section>";
  }
  return "<section id=\"plot\"><h2>Error along execution order</h2>" + errorPlotSvg(result) +
         "<div class=\"note\">Each mark is a record: the relative L2 error (max relative error, or 1 &minus; cosine, "
         "when that is all that is known) of the worst tensor the record produces (outputs; for backward records the "
         "gradients of the forward op's inputs). Hover for details; click to show its rows in the table.</div></section>";
}

std::string preciseNumber(double v) {
  if (!std::isfinite(v)) return numberText(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// DIR0's value and DIR1's, the latter marked when it differs; with more
// digits when 6 do not show the difference.
std::string statCells(double v0, double v1) {
  bool same = v0 == v1 || (std::isnan(v0) && std::isnan(v1));
  std::string a = numberText(v0), b = numberText(v1);
  if (!same && a == b) a = preciseNumber(v0), b = preciseNumber(v1);
  return "<td class=\"num\">" + a + "</td><td class=\"num d1" + (same ? "" : " differs") + "\">" + b + "</td>";
}

std::string statsTable(const RecordComparison& r) {
  std::string s =
      "<table class=\"data stats\"><thead><tr><th rowspan=\"2\">tensor</th><th rowspan=\"2\">verdict</th>"
      "<th rowspan=\"2\">dtype</th><th rowspan=\"2\">shape</th>";
  for (const char* name : {"min", "max", "mean", "norm", "nan", "inf"}) s += std::string("<th colspan=\"2\">") + name + "</th>";
  s += "<th rowspan=\"2\">cosine</th><th rowspan=\"2\">rel_l2</th><th rowspan=\"2\">max_abs</th></tr><tr>";
  for (int i = 0; i < 6; ++i) s += "<th>DIR0</th><th>DIR1</th>";
  s += "</tr></thead><tbody>";
  for (const TensorPair& p : r.tensors) {
    const format::Stats &a = p.stats0, &b = p.stats1;
    s += std::string("<tr class=\"") + verdictName(p.verdict) + "\"><td>" + esc(tensorLabel(p)) + "</td><td>" +
         verdictName(p.verdict) + "</td><td>" + format::dtypeName(p.dtype0) + " / " + format::dtypeName(p.dtype1) +
         "</td><td>" + esc(shapeText(p.shape0)) + (p.shape0 == p.shape1 ? "" : " / " + esc(shapeText(p.shape1))) + "</td>";
    if (p.has_stats0 && p.has_stats1) {
      s += statCells(a.min, b.min) + statCells(a.max, b.max) + statCells(a.mean, b.mean) + statCells(a.norm, b.norm) +
           statCells(static_cast<double>(a.nan_count), static_cast<double>(b.nan_count)) +
           statCells(static_cast<double>(a.inf_count), static_cast<double>(b.inf_count));
    } else {
      s += "<td colspan=\"12\" class=\"note\">no statistics (recorded at level 0)</td>";
    }
    const TensorMetrics& m = p.metrics;
    if (m.compared) {
      s += "<td class=\"num\">" + numberText(m.cosine) + "</td><td class=\"num\">" + numberText(m.rel_l2) +
           "</td><td class=\"num\">" + numberText(m.max_abs) + "</td>";
    } else {
      s += "<td colspan=\"3\">" + esc(m.mismatch) + "</td>";
    }
    s += "</tr>";
  }
  return s + "</tbody></table>";
}

std::string originsTable(const CompareResult& result) {
  std::string s = "<h3>All origins (" + std::to_string(result.origins.size()) +
                  ")</h3><table class=\"data\"><thead><tr><th>name</th><th>op</th><th>pass</th><th>step</th>"
                  "<th>rank</th><th>worst tensor</th><th>rel_l2</th><th>cosine</th><th>called from</th></tr></thead><tbody>";
  for (size_t k = 0; k < result.origins.size() && k < kMaxListed; ++k) {
    const RecordComparison& r = recordAt(result, result.origins[k]);
    const TensorPair* w = worstPair(r);
    s += "<tr><td>" + esc(r.name) + "</td><td>" + esc(r.op) + (r.grad_fn.empty() ? "" : " (" + esc(r.grad_fn) + ")") +
         "</td><td>" + format::passName(r.pass) + "</td><td>" +
         std::to_string(r.step) + "</td><td>" + std::to_string(r.rank) + "</td><td>" + (w ? esc(tensorLabel(*w)) : "") +
         "</td><td class=\"num\">" + (w ? numberText(w->metrics.rel_l2) : "") + "</td><td class=\"num\">" +
         (w ? numberText(w->metrics.cosine) : "") + "</td><td><code>" + esc(r.stack0.empty() ? "" : r.stack0.front()) +
         "</code></td></tr>";
  }
  s += "</tbody></table>";
  if (result.origins.size() > kMaxListed) s += "<div class=\"note\">first " + std::to_string(kMaxListed) + " shown; all are in report.xlsx</div>";
  return s;
}

std::string focusSection(const CompareResult& result) {
  const RecordComparison* focus = focusRecord(result);
  if (focus == nullptr) return "";
  std::string s = "<section id=\"origin\"><h2>" + std::string(focus->origin ? "Origin" : "First failing record") +
                  ": " + esc(focus->name) + "</h2><h3>Statistics, DIR0 (reference) beside DIR1 (tested)</h3>" +
                  statsTable(*focus) + "<h3>Stack (DIR0)</h3>";
  if (focus->stack0.empty()) {
    s += "<div class=\"note\">no stack recorded (record with ACC_STACK=python, native or both)</div>";
  } else {
    s += "<ol class=\"stack\">";
    for (const std::string& frame : focus->stack0) s += "<li>" + esc(frame) + "</li>";
    s += "</ol>";
  }
  if (result.origins.size() > 1) s += originsTable(result);
  return s + "</section>";
}

std::string base64(const std::string& bytes) {
  static const char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 2]);
    out += kDigits[v >> 18];
    out += kDigits[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kDigits[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kDigits[v & 63] : '=';
  }
  return out;
}

// report_rows/chunk-K.js: records K*kChunkRecords.. as
// accChunk(K, "base64 of zlib-compressed JSON"), the JSON an array of
// [position, step, rank, pass (0 fwd, 1 bwd), error, origin, verdict, name,
// [row, ...]], rows as report.csv's. Script files, so that a page opened
// from disk can load them.
void writeRowChunks(const CompareResult& result, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) throw std::runtime_error(dir + ": cannot create directory");
  const std::vector<Column>& columns = reportColumns();
  nlohmann::json chunk = nlohmann::json::array();
  size_t k = 0;
  auto flush = [&] {
    const std::string text = chunk.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    uLongf size = compressBound(text.size());
    std::string packed(size, '\0');
    if (compress2(reinterpret_cast<Bytef*>(packed.data()), &size, reinterpret_cast<const Bytef*>(text.data()),
                  text.size(), 1) != Z_OK) {
      throw std::runtime_error(dir + ": cannot compress rows");
    }
    packed.resize(size);
    const std::string path = dir + "/chunk-" + std::to_string(k) + ".js";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << "accChunk(" << k << ",\"" << base64(packed) << "\");\n";
    if (!out) throw std::runtime_error(path + ": write error");
    chunk = nlohmann::json::array();
    ++k;
  };
  forEachRecord(result, [&](size_t position, const RecordComparison& r) {
    nlohmann::json rows = nlohmann::json::array();
    for (const TensorPair& p : r.tensors) {
      std::vector<std::string> row = reportRow(r, p);
      nlohmann::json cells = nlohmann::json::array();
      for (size_t i = 0; i < row.size() && i < columns.size(); ++i) cells.push_back(cellJson(row[i], columns[i].type));
      rows.push_back(std::move(cells));
    }
    const double e = recordError(r);
    chunk.push_back({position, r.step, r.rank, r.pass == format::Pass::Forward ? 0 : 1,
                     std::isfinite(e) ? nlohmann::json(e) : nlohmann::json(std::isnan(e) ? "nan" : "inf"), r.origin ? 1 : 0,
                     verdictName(r.verdict), r.name, std::move(rows)});
    if (chunk.size() == kChunkRecords) flush();
  });
  if (!chunk.empty()) flush();
}

// What the page needs to load the steps asked for: each step's records'
// positions and verdicts, and where to start.
void writeStepsData(const CompareResult& result, std::ostream& out) {
  const std::vector<Column>& columns = reportColumns();
  nlohmann::json names = nlohmann::json::array(), types = nlohmann::json::array(), steps = nlohmann::json::array();
  for (const Column& c : columns) {
    names.push_back(c.name);
    types.push_back(c.type == ColumnType::Text ? "t" : c.type == ColumnType::Integer ? "i" : "n");
  }
  for (const StepSummary& st : result.steps) {
    steps.push_back({st.rank, st.step, st.first_position, st.last_position, st.records, st.fail, st.warn});
  }
  const RecordComparison* focus = focusRecord(result);
  out << "<script type=\"application/json\" id=\"steps-data\">"
      << scriptJson({{"chunk", kChunkRecords},
                     {"max_shown", kMaxShownRecords},
                     {"columns", names},
                     {"types", types},
                     {"steps", steps},
                     {"focus", focus ? nlohmann::json({focus->rank, focus->step}) : nlohmann::json(nullptr)}})
      << "</script>";
}

void writeTableSection(const CompareResult& result, std::ostream& out, bool large) {
  const std::vector<Column>& columns = reportColumns();
  nlohmann::json names = nlohmann::json::array(), types = nlohmann::json::array();
  for (const Column& c : columns) {
    names.push_back(c.name);
    types.push_back(c.type == ColumnType::Text ? "t" : c.type == ColumnType::Integer ? "i" : "n");
  }
  out << "<section id=\"table\"><h2>Tensor pairs</h2><div class=\"controls\">"
         "<input type=\"search\" id=\"pairs-filter\" placeholder=\"filter by name or op\">"
         "<select id=\"pairs-verdict\"><option value=\"\">all verdicts</option><option value=\"notpass\">fail and warn"
         "</option><option value=\"fail\">fail</option><option value=\"warn\">warn</option><option value=\"pass\">pass"
         "</option></select><button id=\"pairs-prev\">&larr; previous</button><button id=\"pairs-next\">next &rarr;"
         "</button><span id=\"pairs-info\" class=\"note\"></span><span class=\"note\">click a column header to sort"
         "</span></div><noscript><p class=\"note\">The table needs JavaScript; report.csv holds the same rows.</p>"
         "</noscript><div class=\"table-wrap\"><table id=\"pairs\" class=\"data\"><thead><tr></tr></thead><tbody>"
         "</tbody></table></div>";
  if (large) {
    writeStepsData(result, out);
    out << "</section>";
    return;
  }
  out << "<script type=\"application/json\" id=\"pairs-data\">{\"columns\":" << scriptJson(names)
      << ",\"types\":" << scriptJson(types) << ",\"rows\":[";
  bool first = true;
  forEachRecord(result, [&](size_t, const RecordComparison& r) {
    for (const TensorPair& p : r.tensors) {
      std::vector<std::string> row = reportRow(r, p);
      nlohmann::json cells = nlohmann::json::array();
      for (size_t i = 0; i < row.size() && i < columns.size(); ++i) cells.push_back(cellJson(row[i], columns[i].type));
      out << (first ? "" : ",") << scriptJson(cells);
      first = false;
    }
  });
  out << "]}</script></section>";
}

// Per module, failing modules first in the order their first failure ran:
// which block of the model drifts first.
std::string modulesSection(const CompareResult& result) {
  if (result.modules.empty()) return "";
  std::string s = "<section id=\"modules\"><h2>Modules (" + std::to_string(result.modules.size()) +
                  ")</h2><div class=\"note\">Failing modules first, in the order their first failure ran; worst "
                  "error: the largest output error (rel_l2) of the module's records.</div><table class=\"data\">"
                  "<thead><tr><th>module</th><th>records</th><th>fail</th><th>warn</th><th>origins</th><th>worst "
                  "error</th><th>worst record</th><th>first failing record</th></tr></thead><tbody>";
  for (size_t i = 0; i < result.modules.size() && i < kMaxListed; ++i) {
    const ModuleSummary& m = result.modules[i];
    const char* cls = m.fail ? "fail" : m.warn ? "warn" : "pass";
    s += std::string("<tr class=\"") + cls + "\"><td><code>" + esc(moduleLabel(m.module)) +
         "</code></td><td class=\"num\">" + std::to_string(m.records) + "</td><td class=\"num\">" +
         std::to_string(m.fail) + "</td><td class=\"num\">" + std::to_string(m.warn) + "</td><td class=\"num\">" +
         std::to_string(m.origins) + "</td><td class=\"num\">" + numberText(m.worst_error) + "</td><td>" +
         esc(m.worst_record) + "</td><td>" +
         (m.first_failing.empty() ? "" : esc(m.first_failing) + " (step " + std::to_string(m.first_failing_step) + ")") +
         "</td></tr>";
  }
  s += "</tbody></table>";
  if (result.modules.size() > kMaxListed) s += "<div class=\"note\">first " + std::to_string(kMaxListed) + " shown; all are in report.xlsx and summary.json</div>";
  return s + "</section>";
}

// ACC_GRADS: one row per parameter, one cell per step, coloured by verdict,
// the numbers on hover; at most kMapRows x kMapSteps cells, steps sampled
// evenly beyond that (report.csv holds every record).
std::string gradientsSection(const CompareResult& result) {
  constexpr size_t kMapRows = 400, kMapSteps = 120;
  if (result.gradients.empty()) return "";
  std::vector<int64_t> steps;
  for (const GradientRow& row : result.gradients) {
    for (const GradientCell& c : row.cells) steps.push_back(c.step);
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  std::vector<int64_t> shown;
  for (size_t k = 0; k < kMapSteps && k < steps.size(); ++k) shown.push_back(steps[k * steps.size() / std::min(steps.size(), kMapSteps)]);
  const GradientPart first = firstFailingGradient(result.gradients);
  std::string s = "<section id=\"gradients\"><h2>Gradients (" + std::to_string(result.gradients.size()) +
                  " parameters, " + std::to_string(steps.size()) + " steps)</h2><div class=\"note\">" +
                  (first.cell ? "They part first at step " + std::to_string(first.cell->step) + ": <code>" +
                                    esc(first.row->parameter) + "</code>. "
                              : std::string("No gradient fails. ")) +
                  "Each cell is one parameter's gradient at one optimizer step (ACC_GRADS), coloured by its verdict; "
                  "hover for its error and the share of elements whose signs agree.";
  if (shown.size() < steps.size()) s += " " + std::to_string(shown.size()) + " of the steps, evenly spaced.";
  if (result.gradients.size() > kMapRows) s += " The first " + std::to_string(kMapRows) + " parameters.";
  s += "</div><div class=\"table-wrap\"><table class=\"gradmap\"><thead><tr><th>parameter \\ step</th>";
  for (size_t k = 0; k < shown.size(); ++k) {
    // Every step's number while they fit, then every tenth.
    const bool label = shown.size() <= 30 || k % 10 == 0;
    s += "<th title=\"step " + std::to_string(shown[k]) + "\">" + (label ? std::to_string(shown[k]) : "") + "</th>";
  }
  s += "</tr></thead><tbody>";
  for (size_t i = 0; i < result.gradients.size() && i < kMapRows; ++i) {
    const GradientRow& row = result.gradients[i];
    s += "<tr><th>" + esc(row.parameter) + (row.rank ? " (rank " + std::to_string(row.rank) + ")" : "") + "</th>";
    size_t c = 0;
    for (int64_t step : shown) {
      while (c < row.cells.size() && row.cells[c].step < step) ++c;
      if (c == row.cells.size() || row.cells[c].step != step) {
        s += "<td class=\"none\" title=\"step " + std::to_string(step) + ": not recorded\"></td>";
        continue;
      }
      const GradientCell& cell = row.cells[c];
      s += std::string("<td class=\"") + verdictName(cell.verdict) + "\" title=\"" + esc(row.parameter) + ", step " +
           std::to_string(step) + ": error " + numberText(cell.error) +
           (std::isnan(cell.sign_agree) ? "" : ", signs agree " + numberText(cell.sign_agree)) + "\"></td>";
    }
    s += "</tr>";
  }
  return s + "</tbody></table></div></section>";
}

std::string unmatchedSection(const CompareResult& result) {
  if (result.unmatched.empty()) return "";
  std::string s = "<section id=\"unmatched\"><h2>Unmatched records (" + std::to_string(result.unmatched.size()) +
                  ")</h2><table class=\"data\"><thead><tr><th>only in</th><th>name</th><th>op</th><th>step</th>"
                  "<th>rank</th><th>index</th></tr></thead><tbody>";
  for (size_t i = 0; i < result.unmatched.size() && i < kMaxListed; ++i) {
    const UnmatchedRecord& u = result.unmatched[i];
    s += std::string("<tr><td>") + (u.side == 0 ? "DIR0" : "DIR1") + "</td><td>" + esc(u.name) + "</td><td>" +
         esc(u.op) + "</td><td>" + std::to_string(u.step) + "</td><td>" + std::to_string(u.rank) + "</td><td>" +
         std::to_string(u.index) + "</td></tr>";
  }
  s += "</tbody></table>";
  if (result.unmatched.size() > kMaxListed) s += "<div class=\"note\">first " + std::to_string(kMaxListed) + " shown; all are in report.xlsx</div>";
  return s + "</section>";
}

std::string problemsSection(const CompareResult& result) {
  if (result.problems.empty()) return "";
  std::string s = "<section id=\"problems\"><h2>Problems reading the recordings</h2><ul>";
  for (const std::string& p : result.problems) s += "<li>" + esc(p) + "</li>";
  return s + "</ul></section>";
}

}  // namespace

void writeHtmlReport(const CompareResult& result, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot create file");
  Counts c = count(result);
  const bool large = c.pairs > kInlinePairs;
  const std::string rows_dir = (std::filesystem::path(path).parent_path() / "report_rows").string();
  if (large) {
    writeRowChunks(result, rows_dir);
  } else {
    std::error_code ec;
    std::filesystem::remove_all(rows_dir, ec);  // an earlier report's
  }
  const RecordComparison* focus = focusRecord(result);
  std::string title = focus ? "divergence at " + focus->name : "no divergence";
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>acc compare: "
      << esc(title) << "</title><style>" << kReportCss << "</style></head><body><main><header><h1>acc compare</h1>"
      << "<div class=\"dirs\">DIR0 (reference): <code>" << esc(result.dir0) << "</code> &middot; DIR1 (tested): <code>"
      << esc(result.dir1) << "</code></div></header>"
      << settingsSection(result) << verdictSection(result, c) << overviewSection(result) << plotSection(result, large)
      << focusSection(result) << modulesSection(result) << gradientsSection(result);
  writeTableSection(result, out, large);
  out << unmatchedSection(result) << problemsSection(result) << "<script>" << kReportJs
      << "</script></main></body></html>\n";
  out.close();
  if (out.fail()) throw std::runtime_error(path + ": write error");
}

}  // namespace acc::analyzer
