// The documentation must describe the code: every ACC_* variable with its
// default in README.md (one line) and in docs/guide/recording.md (every
// allowed value), every acc-analyzer command in README.md, the current
// format version in docs/FORMAT.md, and every relative link in README.md
// and docs/ pointing at a file that exists.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "analyzer/cli/commands.h"
#include "env/config.h"
#include "format/record.h"

namespace {

std::string read(const std::string& relative) {
  std::ifstream in(std::string(ACC_SOURCE_DIR) + "/" + relative);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The table row a document gives variable `v`: "| `ACC_X` | `default` |".
std::string variableRow(const acc::env::Variable& v) {
  std::string def = v.default_value;
  std::string shown = def == "(all)" ? "all" : def == "(none)" ? "none" : "`" + def + "`";
  return std::string("| `") + v.name + "` | " + shown + " |";
}

// Every variable's row, with its default, in the document at `relative`.
void expectEveryVariableRow(const std::string& relative) {
  const std::string doc = read(relative);
  ASSERT_FALSE(doc.empty()) << relative;
  for (const auto& v : acc::env::variables()) {
    EXPECT_NE(doc.find(variableRow(v)), std::string::npos)
        << relative << " is missing the row starting " << variableRow(v);
  }
}

TEST(Docs, ReadmeListsEveryVariableWithItsDefault) { expectEveryVariableRow("README.md"); }

TEST(Docs, RecordingGuideListsEveryVariableWithItsDefault) { expectEveryVariableRow("docs/guide/recording.md"); }

TEST(Docs, ReadmeListsEveryAnalyzerCommand) {
  const std::string readme = read("README.md");
  for (const auto& c : acc::analyzer::kCommands) {
    std::string row = std::string("| `acc-analyzer ") + c.name + " ";
    EXPECT_NE(readme.find(row), std::string::npos) << "README.md's commands table is missing " << row;
  }
}

TEST(Docs, RelativeLinksPointAtFilesThatExist) {
  namespace fs = std::filesystem;
  const fs::path source(ACC_SOURCE_DIR);
  std::vector<fs::path> docs{source / "README.md", source / "docs"};
  std::vector<fs::path> files;
  for (const auto& d : docs) {
    if (fs::is_regular_file(d)) files.push_back(d);
    if (!fs::is_directory(d)) continue;
    for (const auto& e : fs::recursive_directory_iterator(d)) {
      if (e.path().extension() == ".md") files.push_back(e.path());
    }
  }
  ASSERT_GE(files.size(), 10u) << "README.md, docs/*.md and docs/guide/*.md";
  const std::regex link(R"(\]\(([^)#:\s]+)(#[^)\s]*)?\))");
  int links = 0;
  for (const auto& f : files) {
    const std::string text = read(fs::relative(f, source).string());
    for (std::sregex_iterator m(text.begin(), text.end(), link), end; m != end; ++m) {
      ++links;
      fs::path target = f.parent_path() / (*m)[1].str();
      EXPECT_TRUE(fs::exists(target)) << fs::relative(f, source) << " links to " << (*m)[1].str()
                                      << ", which does not exist";
    }
  }
  EXPECT_GT(links, 20);
}

TEST(Docs, ReadmeDefaultsMatchTheParsedDefaults) {
  auto parsed = acc::env::parse([](const char*) -> const char* { return nullptr; }, nullptr);
  ASSERT_TRUE(parsed.ok());
  const auto& c = parsed.config;
  auto defaultOf = [](const char* name) {
    for (const auto& v : acc::env::variables()) {
      if (std::string(v.name) == name) return std::string(v.default_value);
    }
    return std::string("?");
  };
  EXPECT_EQ(defaultOf("ACC_LEVEL"), std::to_string(c.level));
  EXPECT_EQ(defaultOf("ACC_OUTPUT_DIR"), c.output_dir);
  EXPECT_EQ(defaultOf("ACC_SKIP"), std::to_string(c.skip));
  EXPECT_EQ(defaultOf("ACC_BUFFER_MB"), std::to_string(c.buffer_mb));
  EXPECT_EQ(defaultOf("ACC_ZSTD_LEVEL"), std::to_string(c.zstd_level));
  EXPECT_EQ(defaultOf("ACC_DATA_ZSTD_LEVEL"), std::to_string(c.data_zstd_level));
  EXPECT_EQ(defaultOf("ACC_FRAME_KB"), std::to_string(c.frame_kb));
  EXPECT_EQ(defaultOf("ACC_DATA_THREADS"), "auto");
  EXPECT_EQ(c.data_threads, acc::env::dataThreadsFor(acc::env::usableCpus()));
  EXPECT_EQ(defaultOf("ACC_PASSES"), acc::env::passesName(c.passes));
  EXPECT_EQ(defaultOf("ACC_STACK"), acc::env::stackModeName(c.stack));
}

TEST(Docs, FormatDocumentNamesTheCurrentVersion) {
  const std::string doc = read("docs/FORMAT.md");
  EXPECT_NE(doc.find("# acc recording format, version " + std::to_string(acc::format::kFormatVersion)),
            std::string::npos);
  EXPECT_NE(doc.find("- " + std::to_string(acc::format::kFormatVersion) + ": "), std::string::npos)
      << "docs/FORMAT.md's version history lacks the current version";
}

}  // namespace
