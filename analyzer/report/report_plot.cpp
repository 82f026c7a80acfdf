#include "analyzer/report/report_plot.h"
#include "analyzer/common/text.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <cstdio>

#include "analyzer/report/markup.h"
#include "analyzer/report/record_error.h"

namespace acc::analyzer {
namespace {

constexpr double kWidth = 1320, kHeight = 340;
constexpr double kLeft = 70, kRight = 16, kTop = 48, kBottom = 44;
constexpr int kMinDecade = -16, kMaxDecade = 8;
constexpr size_t kMaxBoundaryLabels = 30;

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Maps errors to the vertical axis: decades lo..hi, exact zeros one band
// below, NaN/Inf one band above (when any).
struct YAxis {
  int lo = -8, hi = 0;
  bool has_inf = false;
  double bottom() const { return lo - 1; }
  double top() const { return has_inf ? hi + 1 : hi; }
  double level(double e) const {
    if (std::isnan(e) || e <= 0) return bottom();
    if (std::isinf(e)) return top();
    return std::clamp(std::log10(e), static_cast<double>(lo), static_cast<double>(hi));
  }
  double y(double level) const { return kTop + (top() - level) / (top() - bottom()) * (kHeight - kTop - kBottom); }
};

YAxis makeAxis(const std::vector<double>& errors) {
  YAxis a;
  double min_pos = INFINITY, max_pos = 0;
  for (double e : errors) {
    if (std::isinf(e)) a.has_inf = true;
    else if (e > 0) min_pos = std::min(min_pos, e), max_pos = std::max(max_pos, e);
  }
  if (max_pos > 0) {
    a.lo = std::max(kMinDecade, static_cast<int>(std::floor(std::log10(min_pos))));
    a.hi = std::min(kMaxDecade, static_cast<int>(std::ceil(std::log10(max_pos))));
    a.hi = std::max(a.hi, a.lo + 1);
  }
  return a;
}

double niceStep(size_t n) {
  double raw = std::max(1.0, static_cast<double>(n) / 10);
  double p = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

std::string axes(const YAxis& a, size_t n, double (*x)(size_t, size_t)) {
  std::string s = "<g class=\"axes\">";
  const double x0 = kLeft, x1 = kWidth - kRight, y1 = kHeight - kBottom;
  int every = (a.hi - a.lo) > 10 ? 2 : 1;
  for (int k = a.lo; k <= a.hi; ++k) {
    std::string y = fmt(a.y(k));
    s += "<line class=\"grid\" x1=\"" + fmt(x0) + "\" x2=\"" + fmt(x1) + "\" y1=\"" + y + "\" y2=\"" + y + "\"/>";
    if ((k - a.lo) % every == 0) {
      s += "<text class=\"tick\" x=\"" + fmt(x0 - 6) + "\" y=\"" + fmt(a.y(k) + 4) + "\" text-anchor=\"end\">1e" +
           std::to_string(k) + "</text>";
    }
  }
  s += "<text class=\"tick\" x=\"" + fmt(x0 - 6) + "\" y=\"" + fmt(a.y(a.bottom()) + 4) +
       "\" text-anchor=\"end\">0</text>";
  if (a.has_inf) {
    s += "<text class=\"tick\" x=\"" + fmt(x0 - 6) + "\" y=\"" + fmt(a.y(a.top()) + 4) +
         "\" text-anchor=\"end\">nan/inf</text>";
  }
  double step = niceStep(n);
  for (double i = 0; i < static_cast<double>(n); i += step) {
    double xi = x(static_cast<size_t>(i), n);
    s += "<line class=\"tickmark\" x1=\"" + fmt(xi) + "\" x2=\"" + fmt(xi) + "\" y1=\"" + fmt(y1) + "\" y2=\"" +
         fmt(y1 + 5) + "\"/><text class=\"tick\" x=\"" + fmt(xi) + "\" y=\"" + fmt(y1 + 18) +
         "\" text-anchor=\"middle\">" + std::to_string(static_cast<size_t>(i)) + "</text>";
  }
  s += "<rect class=\"frame\" x=\"" + fmt(x0) + "\" y=\"" + fmt(kTop) + "\" width=\"" + fmt(x1 - x0) +
       "\" height=\"" + fmt(y1 - kTop) + "\"/>";
  s += "<text class=\"label\" x=\"" + fmt((x0 + x1) / 2) + "\" y=\"" + fmt(kHeight - 6) +
       "\" text-anchor=\"middle\">record, in execution order</text>";
  s += "<text class=\"label\" transform=\"translate(14 " + fmt((kTop + y1) / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">worst relative error (log scale)</text>";
  return s + "</g>";
}

std::string legend() {
  double x = kLeft + 8, y = 12;
  return "<g class=\"legend\"><circle class=\"fwd\" cx=\"" + fmt(x) + "\" cy=\"" + fmt(y) +
         "\" r=\"4\"/><text x=\"" + fmt(x + 8) + "\" y=\"" + fmt(y + 4) + "\">forward</text><rect class=\"bwd\" x=\"" +
         fmt(x + 80) + "\" y=\"" + fmt(y - 4) + "\" width=\"8\" height=\"8\"/><text x=\"" + fmt(x + 92) + "\" y=\"" +
         fmt(y + 4) + "\">backward</text><line class=\"origin-line\" x1=\"" + fmt(x + 175) + "\" x2=\"" +
         fmt(x + 175) + "\" y1=\"" + fmt(y - 7) + "\" y2=\"" + fmt(y + 7) + "\"/><text x=\"" + fmt(x + 182) +
         "\" y=\"" + fmt(y + 4) + "\">origin</text><circle class=\"fwd nocmp\" cx=\"" + fmt(x + 240) + "\" cy=\"" +
         fmt(y) + "\" r=\"4\"/><text x=\"" + fmt(x + 248) + "\" y=\"" + fmt(y + 4) + "\">not compared</text></g>";
}

double xOf(size_t i, size_t n) {
  const double span = kWidth - kLeft - kRight;
  return n > 1 ? kLeft + span * static_cast<double>(i) / static_cast<double>(n - 1) : kLeft + span / 2;
}

// What the plot shows of one record.
struct Point {
  std::string name;
  uint64_t index0 = 0;
  int64_t step = 0, rank = 0;
  bool forward = true, origin = false;
  Verdict verdict = Verdict::Pass;
  double error = 0;
};

// Faint lines where the step or rank changes.
std::string boundaries(const std::vector<Point>& points) {
  std::vector<size_t> at;
  for (size_t i = 1; i < points.size(); ++i) {
    const Point &a = points[i - 1], &b = points[i];
    if (a.step != b.step || a.rank != b.rank) at.push_back(i);
  }
  std::string s = "<g class=\"boundaries\">";
  for (size_t i : at) {
    const Point& r = points[i];
    double x = (xOf(i - 1, points.size()) + xOf(i, points.size())) / 2;
    s += "<line class=\"boundary\" x1=\"" + fmt(x) + "\" x2=\"" + fmt(x) + "\" y1=\"" + fmt(kTop) + "\" y2=\"" +
         fmt(kHeight - kBottom) + "\"/>";
    if (at.size() <= kMaxBoundaryLabels) {
      bool at_right = x > kWidth - kRight - 60;  // keep the label inside the frame
      s += "<text class=\"boundary-label\" x=\"" + fmt(at_right ? x - 3 : x + 3) + "\" y=\"" + fmt(kTop + 11) +
           "\" text-anchor=\"" + (at_right ? "end" : "start") + "\">" +
           (points[i - 1].rank != r.rank ? "rank " + std::to_string(r.rank) : "step " + std::to_string(r.step)) +
           "</text>";
    }
  }
  return s + "</g>";
}

std::string mark(const Point& r, double x, double y) {
  const double error = r.error;
  const bool fwd = r.forward;
  std::string cls = std::string("mark ") + (fwd ? "fwd" : "bwd") + (std::isnan(error) ? " nocmp" : "") +
                    (r.origin ? " is-origin" : "");
  std::string title = "<title>" + escapeMarkup(r.name) + "\nindex " + std::to_string(r.index0) + ", step " +
                      std::to_string(r.step) + ", rank " + std::to_string(r.rank) + "\nerror " +
                      numberText(error) + ", " + verdictName(r.verdict) + "</title>";
  double size = r.origin ? 5 : 3;
  if (fwd) {
    return "<circle class=\"" + cls + "\" cx=\"" + fmt(x) + "\" cy=\"" + fmt(y) + "\" r=\"" + fmt(size) + "\">" +
           title + "</circle>";
  }
  return "<rect class=\"" + cls + "\" x=\"" + fmt(x - size) + "\" y=\"" + fmt(y - size) + "\" width=\"" +
         fmt(2 * size) + "\" height=\"" + fmt(2 * size) + "\">" + title + "</rect>";
}

// `at`: each origin's index among the points.
std::string originMarkers(const std::vector<Point>& points, const std::vector<size_t>& at) {
  std::string s;
  const size_t n = points.size();
  for (size_t k = 0; k < at.size(); ++k) {
    size_t i = at[k];
    if (i >= n) continue;
    double x = xOf(i, n);
    s += std::string("<g class=\"origin-marker") + (k == 0 ? " first" : "") + "\"><line class=\"origin-line\" x1=\"" +
         fmt(x) + "\" x2=\"" + fmt(x) + "\" y1=\"" + fmt(kTop) + "\" y2=\"" + fmt(kHeight - kBottom) +
         "\"/><path class=\"origin-head\" d=\"M" + fmt(x - 6) + " " + fmt(kTop - 10) + "L" + fmt(x + 6) + " " +
         fmt(kTop - 10) + "L" + fmt(x) + " " + fmt(kTop) + "Z\"/>";
    if (k == 0) {
      bool right_half = x > kWidth / 2;
      s += "<text class=\"origin-label\" x=\"" + fmt(x + (right_half ? -10 : 10)) + "\" y=\"" + fmt(kTop - 14) +
           "\" text-anchor=\"" + (right_half ? "end" : "start") + "\">first origin: " +
           escapeMarkup(points[i].name) + "</text>";
    }
    s += "</g>";
  }
  return s;
}

}  // namespace

// "1 origin", "2 origins".
std::string counted(uint64_t n, const std::string& noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

std::string stepsOverviewSvg(const CompareResult& result) {
  // Steps of all ranks together: each step's worst error, forward and backward.
  struct Step {
    double forward = std::nan(""), backward = std::nan("");
    uint64_t fail = 0, origins = 0;
  };
  std::map<int64_t, Step> by_step;
  auto worse = [](double& into, double e) {
    if (!std::isnan(e) && (std::isnan(into) || e > into)) into = e;
  };
  for (const StepSummary& st : result.steps) {
    Step& s = by_step[st.step];
    worse(s.forward, st.worst_forward);
    worse(s.backward, st.worst_backward);
    s.fail += st.fail;
    s.origins += st.origins;
  }
  std::vector<int64_t> steps;
  std::vector<double> errors;
  for (const auto& [step, s] : by_step) {
    steps.push_back(step);
    errors.push_back(s.forward);
    errors.push_back(s.backward);
  }
  const size_t n = steps.size();
  YAxis axis = makeAxis(errors);
  std::string svg = "<svg id=\"steps-overview\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + fmt(kWidth) +
                    " " + fmt(kHeight) + "\" width=\"" + fmt(kWidth) + "\" height=\"" + fmt(kHeight) +
                    "\" role=\"img\" aria-label=\"worst error per step\">";
  std::string a = axes(axis, n, xOf);
  // The x axis counts steps here, not records.
  const std::string records_label = "record, in execution order";
  a.replace(a.find(records_label), records_label.size(), "step (every recorded step, all ranks)");
  svg += a;
  svg += "<g class=\"legend\"><line class=\"overview fwd\" x1=\"" + fmt(kLeft + 8) + "\" x2=\"" + fmt(kLeft + 28) +
         "\" y1=\"12\" y2=\"12\"/><text x=\"" + fmt(kLeft + 34) + "\" y=\"16\">forward, worst of the step</text>" +
         "<line class=\"overview bwd\" x1=\"" + fmt(kLeft + 210) + "\" x2=\"" + fmt(kLeft + 230) +
         "\" y1=\"12\" y2=\"12\"/><text x=\"" + fmt(kLeft + 236) + "\" y=\"16\">backward, worst of the step</text></g>";
  for (int pass = 0; pass < 2; ++pass) {
    std::string points;
    for (size_t i = 0; i < n; ++i) {
      const Step& s = by_step[steps[i]];
      const double e = pass == 0 ? s.forward : s.backward;
      points += fmt(xOf(i, n)) + "," + fmt(axis.y(axis.level(e))) + " ";
    }
    svg += std::string("<polyline class=\"overview ") + (pass == 0 ? "fwd" : "bwd") + "\" points=\"" + points + "\"/>";
  }
  // Where the runs part: the first step with a failing record.
  for (size_t i = 0; i < n; ++i) {
    const Step& s = by_step[steps[i]];
    if (s.fail == 0) continue;
    const double x = xOf(i, n);
    const bool right_half = x > kWidth / 2;
    svg += "<g class=\"first-failing-step\"><line class=\"origin-line\" x1=\"" + fmt(x) + "\" x2=\"" + fmt(x) +
           "\" y1=\"" + fmt(kTop) + "\" y2=\"" + fmt(kHeight - kBottom) + "\"/><text class=\"origin-label\" x=\"" +
           fmt(x + (right_half ? -8 : 8)) + "\" y=\"" + fmt(kTop - 8) + "\" text-anchor=\"" +
           (right_half ? "end" : "start") + "\">runs part at step " + std::to_string(steps[i]) + " (" +
           counted(s.fail, "failing record") + (s.origins ? ", " + counted(s.origins, "origin") : "") + ")</text></g>";
    break;
  }
  return svg + "</svg>";
}

std::string errorPlotSvg(const CompareResult& result) {
  std::vector<Point> points;
  std::map<size_t, size_t> index_of;  // record position -> its point
  forEachRecord(result, [&](size_t position, const RecordComparison& r) {
    index_of[position] = points.size();
    points.push_back({r.name, r.index0, r.step, r.rank, r.pass == format::Pass::Forward, r.origin, r.verdict,
                      recordError(r)});
  });
  std::vector<size_t> origins;
  for (size_t o : result.origins) {
    auto it = index_of.find(o);
    if (it != index_of.end()) origins.push_back(it->second);
  }
  const size_t n = points.size();
  std::vector<double> errors(n);
  for (size_t i = 0; i < n; ++i) errors[i] = points[i].error;
  YAxis axis = makeAxis(errors);
  std::string s = "<svg id=\"error-plot\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + fmt(kWidth) + " " +
                  fmt(kHeight) + "\" width=\"" + fmt(kWidth) + "\" height=\"" + fmt(kHeight) +
                  "\" role=\"img\" aria-label=\"error along execution order\">";
  s += axes(axis, n, xOf) + boundaries(points) + legend();
  s += "<g class=\"marks\">";
  for (size_t i = 0; i < n; ++i) s += mark(points[i], xOf(i, n), axis.y(axis.level(errors[i])));
  s += "</g>" + originMarkers(points, origins);
  return s + "</svg>";
}

}  // namespace acc::analyzer
