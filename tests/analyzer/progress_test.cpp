// compare's and check's progress lines (analyzer/compare/progress.h), as a
// log file (not a terminal) receives them.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>

#include "analyzer/compare/progress.h"

namespace acc::analyzer {
namespace {

std::string linesOf(const std::function<void(ProgressReporter&)>& updates) {
  std::FILE* f = std::tmpfile();
  {
    ProgressReporter reporter(f, false, "compare");
    updates(reporter);
    reporter.finish();
  }
  std::string text;
  std::rewind(f);
  for (int c; (c = std::fgetc(f)) != EOF;) text += static_cast<char>(c);
  std::fclose(f);
  return text;
}

TEST(Progress, StatisticsOnlyComparisonsCountRecordsPerSecond) {
  const std::string text = linesOf([](ProgressReporter& r) {
    CompareProgress p;
    p.pairs_done = 50000;
    p.pairs_total = 100000;
    p.seconds = 10;
    r.update(p);
  });
  EXPECT_EQ(text, "acc-analyzer compare:  50%  comparing  50000/100000 records  5000 records/s\n");
}

TEST(Progress, TensorDataComparisonsCountBytes) {
  const std::string text = linesOf([](ProgressReporter& r) {
    CompareProgress p;
    p.pairs_done = 10;
    p.pairs_total = 40;
    p.bytes_done = 1000;
    p.bytes_total = 4000;
    p.seconds = 10;
    r.update(p);
  });
  EXPECT_NE(text.find(" 25%  comparing  10/40 records  "), std::string::npos) << text;
  EXPECT_NE(text.find("/s\n"), std::string::npos) << text;
}

TEST(Progress, ReportWritingIsShownAfterAFewSecondsOnly) {
  const std::string text = linesOf([](ProgressReporter& r) {
    CompareProgress p;
    p.writing = true;
    p.pairs_total = 3;
    p.seconds = 1;  // short: nothing
    r.update(p);
    p.pairs_done = 1;
    p.seconds = 6;
    r.update(p);
    p.pairs_done = 2;
    p.seconds = 7;  // within 5 s of the last line: nothing
    r.update(p);
  });
  EXPECT_EQ(text, "acc-analyzer compare:  33%  writing reports  1/3\n");
}

// compare and check detect the terminal: piped to a file, their output is
// the verdict alone unless --progress asks for the lines.
TEST(Progress, NotATerminalGetsLinesOnlyWhenAsked) {
  for (const bool asked : {false, true}) {
    std::FILE* f = std::tmpfile();
    {
      ProgressReporter reporter(f, "compare", asked);
      CompareProgress p;
      p.pairs_done = 1;
      p.pairs_total = 3;
      p.seconds = 60;
      reporter.update(p);
      reporter.finish();
    }
    const long size = std::ftell(f);
    std::fclose(f);
    EXPECT_EQ(size > 0, asked);
  }
}

}  // namespace
}  // namespace acc::analyzer
