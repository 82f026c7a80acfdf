// report.html: written from synthetic results, checked as text and as
// rendered by headless Chromium (DOM and screenshot).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <regex>

#include "analyzer/compare/steps.h"
#include "analyzer/report/report_html.h"
#include "tests/reports/report_tools.h"
#include "tests/reports/synthetic_result.h"

namespace acc::test {
namespace {

using analyzer::CompareResult;

size_t tensorPairs(const CompareResult& r) {
  size_t n = 0;
  for (const auto& record : r.records) n += record.tensors.size();
  return n;
}

#define SKIP_WITHOUT_CHROMIUM()                                                                     \
  if (!chromiumInstalled()) GTEST_SKIP() << kChromium << " is not installed (apt-get install chromium; " \
                                                        "scripts/setup.sh installs it)"

TEST(ReportHtml, SelfContainedAndEscaped) {
  TempDir dir;
  writeHtmlReport(syntheticResult(), dir / "report.html");
  std::string html = readFile(dir / "report.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // Nothing loaded from elsewhere: the only URL is the SVG namespace.
  EXPECT_EQ(countOf(html, "http://") + countOf(html, "https://"), countOf(html, "http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  // Names with < > & ' never appear raw, in markup or in the embedded JSON.
  EXPECT_EQ(html.find("scale<float>"), std::string::npos);
  EXPECT_NE(html.find("custom::scale&lt;float&gt;&amp;&#39;"), std::string::npos);
  EXPECT_NE(html.find("forward&lt;T&gt; &amp; more"), std::string::npos);
  EXPECT_NE(html.find("scale\\u003cfloat\\u003e\\u0026'"), std::string::npos);
  EXPECT_NE(html.find("run_cpu &amp; &lt;reference&gt;"), std::string::npos);
}

TEST(ReportHtml, VerdictComesFirstAndNamesTheOrigin) {
  TempDir dir;
  writeHtmlReport(syntheticResult(), dir / "report.html");
  std::string html = readFile(dir / "report.html");
  size_t verdict = html.find("id=\"verdict\""), plot = html.find("id=\"plot\""), table = html.find("id=\"table\"");
  ASSERT_NE(verdict, std::string::npos);
  EXPECT_LT(verdict, plot);
  EXPECT_LT(plot, table);
  EXPECT_NE(html.find("Divergence starts at <span class=\"headline-name\">aten::gelu.3.fwd</span>"), std::string::npos);
  EXPECT_NE(html.find("/home/user/model.py:42"), std::string::npos);  // its stack
  EXPECT_NE(html.find("All origins (2)"), std::string::npos);           // the later origin is listed
  EXPECT_NE(html.find("aten::linear (AddmmBackward0)"), std::string::npos);
  EXPECT_NE(html.find("aten::contiguous.7.fwd"), std::string::npos);    // unmatched
  EXPECT_NE(html.find("1 corrupt frame(s) skipped"), std::string::npos); // problems
}

TEST(ReportHtml, NoDivergenceSaysSo) {
  TempDir dir;
  CompareResult result = syntheticResult();
  result.origins.clear();
  for (auto& r : result.records) {
    r.origin = false;
    r.verdict = analyzer::Verdict::Pass;
    for (auto& p : r.tensors) p.verdict = analyzer::Verdict::Pass;
  }
  writeHtmlReport(result, dir / "report.html");
  std::string html = readFile(dir / "report.html");
  EXPECT_NE(html.find("No divergence: every tensor pair passes"), std::string::npos);
  EXPECT_EQ(html.find("origin-marker"), std::string::npos);
  EXPECT_EQ(html.find("id=\"origin\""), std::string::npos);
}

TEST(ReportHtml, UnwritablePathThrowsNamingIt) {
  const std::string path = "/nonexistent-acc-dir/report.html";
  try {
    writeHtmlReport(syntheticResult(), path);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(ReportHtml, ChromiumRendersPlotTableAndScreenshot) {
  SKIP_WITHOUT_CHROMIUM();
  TempDir dir;
  CompareResult result = syntheticResult();
  writeHtmlReport(result, dir / "report.html");

  RunResult dom = runChromium(dir / "report.html", {"--dump-dom"});
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  const std::string& d = dom.out;
  ASSERT_NE(d.find("<svg id=\"error-plot\""), std::string::npos) << d.substr(0, 2000);
  EXPECT_EQ(countOf(d, "class=\"mark "), result.records.size());
  EXPECT_EQ(countOf(d, "class=\"mark bwd"), 3u);
  EXPECT_EQ(countOf(d, "class=\"origin-marker"), result.origins.size());
  EXPECT_EQ(countOf(d, "class=\"origin-marker first\""), 1u);
  EXPECT_NE(d.find("first origin: aten::gelu.3.fwd"), std::string::npos);
  // The script ran: the table has one row per tensor pair, failing ones marked.
  size_t begin = d.find("<table id=\"pairs\""), end = d.find("</table>", begin);
  ASSERT_NE(begin, std::string::npos);
  const std::string pairs = d.substr(begin, end - begin);
  EXPECT_EQ(countOf(pairs, "<tr class=\"fail"), 6u);
  EXPECT_EQ(countOf(pairs, "<tr class=\"fail origin\""), 3u);
  EXPECT_EQ(countOf(pairs, "<tr class="), tensorPairs(result));
  EXPECT_NE(d.find("rows 1\u2013" + std::to_string(tensorPairs(result)) + " of " + std::to_string(tensorPairs(result))),
            std::string::npos);
  EXPECT_EQ(d.find("scale<float>"), std::string::npos);  // escaped in the rendered DOM too
  std::smatch layout;
  ASSERT_TRUE(std::regex_search(d, layout, std::regex("data-layout=\"(\\d+),(\\d+),(\\d+),(\\d+)\"")));

  const std::string png = dir / "report.png";
  RunResult shot = runChromium(dir / "report.html", {"--screenshot=" + png});
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  ASSERT_TRUE(exists(png));
  EXPECT_GT(readFile(png).size(), 20000u);
  const std::string py = pythonWith("zlib");
  ASSERT_FALSE(py.empty());
  const std::string rect = layout[1].str() + "," + layout[2].str() + "," + layout[3].str() + "," + layout[4].str();
  RunResult pixels = run({{py, testScript("check_png.py"), png, rect}, {}, "", false, ""});
  EXPECT_EQ(pixels.exit_code, 0) << pixels.out << pixels.err;
  // Kept for a look: ACC_KEEP_SCREENSHOT=path copies it there.
  if (const char* keep = std::getenv("ACC_KEEP_SCREENSHOT")) {
    run({{"/bin/cp", png, keep}, {}, "", false, ""});
  }
}

// Clicks a column header twice and types into the filter box, from a page
// that holds the report in an iframe, and prints what the table shows.
constexpr const char* kDriver = R"HTML(<!DOCTYPE html><html><body><pre id="out"></pre>
<iframe id="report" src="report.html" width="1400" height="900"></iframe>
<script>
document.getElementById('report').addEventListener('load', function () {
  var d = this.contentDocument, out = [];
  var ths = Array.prototype.slice.call(d.querySelectorAll('#pairs thead th'));
  var col = function (name) { return ths.findIndex(function (th) { return th.textContent === name; }); };
  var first = function (c) { return d.querySelector('#pairs tbody tr').cells[c].textContent; };
  ths[col('rel_l2')].click();
  out.push('asc:' + first(col('rel_l2')));
  ths[col('rel_l2')].click();
  out.push('desc:' + first(col('name')) + '=' + first(col('rel_l2')));
  var filter = d.getElementById('pairs-filter');
  filter.value = 'mse_loss';
  filter.dispatchEvent(new Event('input'));
  out.push('filtered:' + d.querySelectorAll('#pairs tbody tr').length);
  document.getElementById('out').textContent = out.join(';');
});
</script></body></html>)HTML";

TEST(ReportHtml, TableSortsByClickedColumnAndFilters) {
  SKIP_WITHOUT_CHROMIUM();
  TempDir dir;
  writeHtmlReport(syntheticResult(), dir / "report.html");
  std::ofstream(dir / "driver.html") << kDriver;
  RunResult dom = runChromium(dir / "driver.html", {"--allow-file-access-from-files", "--dump-dom"});
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_NE(dom.out.find("asc:0;desc:aten::linear.4.bwd=0.09;filtered:4"), std::string::npos)
      << dom.out.substr(0, 400);
}

TEST(ReportHtml, FiftyThousandPairsStayUsable) {
  SKIP_WITHOUT_CHROMIUM();
  TempDir dir;
  CompareResult result = largeResult(25000);
  auto start = std::chrono::steady_clock::now();
  writeHtmlReport(result, dir / "report.html");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10) << "writing took " << seconds << " s";
  RunResult dom = runChromium(dir / "report.html", {"--dump-dom"});
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_EQ(countOf(dom.out, "class=\"mark "), 25000u);
  EXPECT_EQ(countOf(dom.out, "class=\"origin-marker"), 1u);
  // One page of the table is rendered, the rest is a click away.
  EXPECT_NE(dom.out.find("rows 1\u2013500 of 50000"), std::string::npos);
  EXPECT_LT(countOf(dom.out, "<td class=\"num\">"), 50000u);
}

// Past 50,000 tensor pairs the rows go to report_rows/ beside the page,
// which opens on a per-step overview and loads the first failing step.
TEST(ReportHtml, LongComparisonsOpenOnTheirStepsAndLoadRowsOnDemand) {
  SKIP_WITHOUT_CHROMIUM();
  TempDir dir;
  CompareResult result = largeResult(30000);  // 60,000 pairs in 6 steps of 5,000 records
  result.steps = analyzer::summarizeSteps(result);
  writeHtmlReport(result, dir / "report.html");
  EXPECT_LT(readFile(dir / "report.html").size(), 1u << 20);
  for (int k = 0; k < 15; ++k) EXPECT_TRUE(exists(dir / ("report_rows/chunk-" + std::to_string(k) + ".js"))) << k;
  EXPECT_FALSE(exists(dir / "report_rows/chunk-15.js"));

  RunResult dom = runChromium(dir / "report.html", {"--virtual-time-budget=30000", "--dump-dom"});
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  const std::string& d = dom.out;
  // The overview: every step's worst forward and backward error, and where the runs part.
  EXPECT_EQ(countOf(d, "<polyline class=\"overview fwd\""), 1u);
  EXPECT_EQ(countOf(d, "<polyline class=\"overview bwd\""), 1u);
  EXPECT_NE(d.find("runs part at step 3 (1 failing record, 1 origin)"), std::string::npos) << d.substr(0, 3000);
  // The origin's step (3) was loaded from report_rows/: plotted and listed.
  EXPECT_NE(d.find("data-shown-records=\"5000\""), std::string::npos);
  EXPECT_EQ(countOf(d, "class=\"mark "), 5000u);
  EXPECT_EQ(countOf(d, "class=\"origin-marker first\""), 1u);
  EXPECT_NE(d.find("origin: aten::op"), std::string::npos);
  EXPECT_NE(d.find("rows 1\u2013500 of 10000"), std::string::npos);
  EXPECT_NE(d.find("5000 records of rank 0, steps 3\u20133"), std::string::npos);

  // The screenshot shows the overview's lines and the parting step.
  std::smatch layout;
  ASSERT_TRUE(std::regex_search(d, layout, std::regex("id=\"steps-overview\"[^>]*data-layout=\"(\\d+),(\\d+),(\\d+),(\\d+)\"")))
      << d.substr(0, 3000);
  const std::string png = dir / "report.png";
  RunResult shot = runChromium(dir / "report.html", {"--virtual-time-budget=30000", "--screenshot=" + png});
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  const std::string py = pythonWith("zlib");
  ASSERT_FALSE(py.empty());
  const std::string rect = layout[1].str() + "," + layout[2].str() + "," + layout[3].str() + "," + layout[4].str();
  RunResult pixels = run({{py, testScript("check_png.py"), png, rect}, {}, "", false, ""});
  EXPECT_EQ(pixels.exit_code, 0) << pixels.out << pixels.err;
}

}  // namespace
}  // namespace acc::test
