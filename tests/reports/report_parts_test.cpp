// The pieces the reports are built from: markup escaping and text repair.
#include <gtest/gtest.h>

#include "analyzer/report/markup.h"
#include "tests/reports/report_tools.h"

namespace acc::test {
namespace {

using namespace acc::analyzer;

TEST(ReportParts, EscapeMarkupEscapesAndRepairsText) {
  EXPECT_EQ(escapeMarkup("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(escapeMarkup("tab\tnl\n"), "tab\tnl\n");
  EXPECT_EQ(escapeMarkup(std::string("x\x01y", 3)), "x\xEF\xBF\xBDy");
  EXPECT_EQ(escapeMarkup("\xC3\xA9t\xC3\xA9"), "\xC3\xA9t\xC3\xA9");       // été
  EXPECT_EQ(escapeMarkup("bad\xC3"), "bad\xEF\xBF\xBD");                   // truncated sequence
  EXPECT_EQ(escapeMarkup("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
}

TEST(ReportParts, ValidTextRepairsWithoutEscaping) {
  EXPECT_EQ(validText("a<b>&\"c'"), "a<b>&\"c'");
  EXPECT_EQ(validText(std::string("x\x01y", 3)), "x\xEF\xBF\xBDy");
  EXPECT_EQ(validText("bad\xC3"), "bad\xEF\xBF\xBD");
  EXPECT_EQ(validText("tab\tnl\n"), "tab\tnl\n");
}

}  // namespace
}  // namespace acc::test
