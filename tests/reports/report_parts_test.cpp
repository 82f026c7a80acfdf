// The pieces the reports are built from: CRC-32, zip container, cell
// references, markup escaping.
#include <gtest/gtest.h>

#include "analyzer/markup.h"
#include "analyzer/xlsx_workbook.h"
#include "analyzer/zip_writer.h"
#include "tests/reports/report_tools.h"

namespace acc::test {
namespace {

using namespace acc::analyzer;

TEST(ReportParts, Crc32MatchesTheStandardCheckValue) {
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);
  EXPECT_EQ(crc32(""), 0u);
  EXPECT_EQ(crc32("6789", crc32("12345")), 0xCBF43926u);
}

TEST(ReportParts, ColumnLetters) {
  EXPECT_EQ(columnLetters(0), "A");
  EXPECT_EQ(columnLetters(25), "Z");
  EXPECT_EQ(columnLetters(26), "AA");
  EXPECT_EQ(columnLetters(701), "ZZ");
  EXPECT_EQ(columnLetters(702), "AAA");
}

TEST(ReportParts, EscapeMarkupEscapesAndRepairsText) {
  EXPECT_EQ(escapeMarkup("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(escapeMarkup("tab\tnl\n"), "tab\tnl\n");
  EXPECT_EQ(escapeMarkup(std::string("x\x01y", 3)), "x\xEF\xBF\xBDy");
  EXPECT_EQ(escapeMarkup("\xC3\xA9t\xC3\xA9"), "\xC3\xA9t\xC3\xA9");       // été
  EXPECT_EQ(escapeMarkup("bad\xC3"), "bad\xEF\xBF\xBD");                   // truncated sequence
  EXPECT_EQ(escapeMarkup("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
}

TEST(ReportParts, ZipIsReadByPythonZipfile) {
  const std::string py = pythonWith("zipfile");
  ASSERT_FALSE(py.empty());
  TempDir dir;
  {
    ZipWriter zip(dir / "t.zip");
    zip.add("a.txt", "hello");
    zip.add("dir/b.bin", std::string("\0\1\2", 3));
    zip.add("empty", "");
    zip.finish();
  }
  RunResult r = run({{py, "-c",
                      "import sys, zipfile\n"
                      "z = zipfile.ZipFile(sys.argv[1])\n"
                      "assert z.testzip() is None\n"
                      "assert z.namelist() == ['a.txt', 'dir/b.bin', 'empty'], z.namelist()\n"
                      "assert z.read('a.txt') == b'hello' and z.read('dir/b.bin') == b'\\0\\1\\2'\n"
                      "assert z.read('empty') == b''\n"
                      "print('ok')\n",
                      dir / "t.zip"},
                     {}, "", false, ""});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace acc::test
