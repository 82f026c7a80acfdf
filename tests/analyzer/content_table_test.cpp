// The analyzer's table of tensor contents (format v4 references): contents
// older than its in-memory window are read back from its file, references
// to contents never defined are counted, and without a usable temporary
// directory nothing is lost either.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "analyzer/read/content_table.h"

namespace acc::analyzer {
namespace {

format::Tensor defining(uint64_t id) {
  format::Tensor t;
  t.role = format::Role::Output;
  t.content = id;
  t.has_stats = true;
  t.stats.checksum = id * 7 + 1;
  t.stats.norm = static_cast<double>(id);
  return t;
}

format::Tensor referring(uint64_t id) {
  format::Tensor t;
  t.role = format::Role::Input;
  t.content = id;
  t.content_ref = true;
  t.has_stats = true;  // what the reference's flags say the content holds
  return t;
}

// Defines contents 1..n (one record each, as a run's outputs are), then
// resolves one record referring to each of `ids`; returns it.
format::OpRecord referAfter(ContentTable& table, uint64_t n, const std::vector<uint64_t>& ids, uint64_t* unknown) {
  for (uint64_t id = 1; id <= n; ++id) {
    format::OpRecord r;
    r.tensors.push_back(defining(id));
    EXPECT_EQ(table.resolve(r), 0u);
  }
  format::OpRecord r;
  for (uint64_t id : ids) r.tensors.push_back(referring(id));
  *unknown = table.resolve(r);
  return r;
}

TEST(ContentTable, OldContentsAreReadBackFromItsFile) {
  ContentTable table;
  const uint64_t n = 3 * ContentTable::kRecent + 17;
  uint64_t unknown = 0;
  format::OpRecord r = referAfter(table, n, {1, 1000, ContentTable::kRecent + 5, n - 3, n}, &unknown);
  EXPECT_EQ(unknown, 0u);
  EXPECT_GE(table.spilled(), n - ContentTable::kRecent);
  for (const format::Tensor& t : r.tensors) {
    EXPECT_TRUE(t.has_stats) << t.content;
    EXPECT_EQ(t.stats.checksum, t.content * 7 + 1) << t.content;
    EXPECT_EQ(t.stats.norm, static_cast<double>(t.content));
  }
}

TEST(ContentTable, ReferencesToContentsNeverDefinedAreCounted) {
  ContentTable table;
  const uint64_t n = 2 * ContentTable::kRecent;
  uint64_t unknown = 0;
  format::OpRecord r = referAfter(table, n, {n + 1, 5 * n, 3}, &unknown);
  EXPECT_EQ(unknown, 2u);
  EXPECT_FALSE(r.tensors[0].has_stats);
  EXPECT_FALSE(r.tensors[1].has_stats);
  EXPECT_EQ(r.tensors[2].stats.checksum, 3u * 7 + 1);
}

TEST(ContentTable, WithoutATemporaryDirectoryMemoryHoldsThem) {
  const char* before = std::getenv("TMPDIR");
  const std::string saved = before ? before : "";
  ::setenv("TMPDIR", "/nonexistent/acc-content-table-test", 1);
  {
    ContentTable table;
    const uint64_t n = 2 * ContentTable::kRecent + 1;
    uint64_t unknown = 0;
    format::OpRecord r = referAfter(table, n, {1, 2, n / 2}, &unknown);
    EXPECT_EQ(unknown, 0u);
    for (const format::Tensor& t : r.tensors) EXPECT_EQ(t.stats.checksum, t.content * 7 + 1);
  }
  if (before) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
}

}  // namespace
}  // namespace acc::analyzer
