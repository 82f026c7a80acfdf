// The documentation must describe the code: every ACC_* variable with its
// default in the README, the current format version in docs/FORMAT.md.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "env/config.h"
#include "format/record.h"

namespace {

std::string read(const std::string& relative) {
  std::ifstream in(std::string(ACC_SOURCE_DIR) + "/" + relative);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Docs, ReadmeListsEveryVariableWithItsDefault) {
  const std::string readme = read("README.md");
  ASSERT_FALSE(readme.empty());
  for (const auto& v : acc::env::variables()) {
    std::string def = v.default_value;
    std::string shown = def == "(all)" ? "all" : "`" + def + "`";
    std::string row = std::string("| `") + v.name + "` | " + shown + " |";
    EXPECT_NE(readme.find(row), std::string::npos) << "README is missing the row starting " << row;
  }
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
