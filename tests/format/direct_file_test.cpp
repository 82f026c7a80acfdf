// DirectFile (format/direct_file.h): what level 2 writes reaches the file
// whole at every sync(), through O_DIRECT where the filesystem takes it, and
// then leaves the page cache alone.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "format/direct_file.h"

#include "tests/temp_dir.h"

namespace acc::format {
namespace {

namespace fs = std::filesystem;

class DirectFileFixture : public ::testing::Test {
 protected:
  std::string contents() const {
    std::ifstream in(path_, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // Whether this filesystem takes O_DIRECT at all.
  bool filesystemTakesDirect() const {
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    ::close(fd);
    return true;
  }

  // Pages of the file in the page cache.
  size_t cachedPages() const {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    const off_t size = ::lseek(fd, 0, SEEK_END);
    void* map = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> resident((static_cast<size_t>(size) + page - 1) / page);
    EXPECT_EQ(::mincore(map, static_cast<size_t>(size), resident.data()), 0);
    ::munmap(map, static_cast<size_t>(size));
    size_t n = 0;
    for (unsigned char r : resident) n += r & 1;
    return n;
  }

  test::TempDir tmp_{"acc_direct_file"};
  fs::path dir_{tmp_.path()};
  std::string path_ = (dir_ / "records.acc").string();
};

class DirectFileTest : public DirectFileFixture, public ::testing::WithParamInterface<bool> {};
using DirectFileCache = DirectFileFixture;

// Bytes no multiple of the block, staged across the stage's end, and whole
// stages at once: the file is the header and every byte appended at each
// sync(), whether the writes went direct or not.
TEST_P(DirectFileTest, EverySyncLeavesTheWholeFile) {
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  const std::string header = "ACCREC header 16";
  ASSERT_EQ(::write(fd, header.data(), header.size()), static_cast<ssize_t>(header.size()));
  std::string expected = header;
  {
    DirectFile file(fd, header, GetParam());
    const bool direct = GetParam() && filesystemTakesDirect();
    EXPECT_EQ(file.direct(), direct);
    const size_t sizes[] = {1, 4095, 4096, 5000, 3 << 20, 17, DirectFile::kStage, 7 << 20, 100, 0, 4080};
    uint32_t seed = 7;
    for (size_t i = 0; i < std::size(sizes); ++i) {
      std::string bytes(sizes[i], '\0');
      for (char& c : bytes) {
        seed = seed * 1664525u + 1013904223u;
        c = static_cast<char>(seed >> 24);
      }
      ASSERT_EQ(file.append(bytes.data(), bytes.size()), 0);
      expected += bytes;
      if (i % 3 == 2 || i + 1 == std::size(sizes)) {
        ASSERT_EQ(file.sync(), 0);
        const std::string got = contents();
        ASSERT_EQ(got.size(), expected.size()) << "after append " << i;
        EXPECT_TRUE(got == expected) << "after append " << i;
      }
    }
    EXPECT_EQ(file.direct(), direct);  // no refusal on the way
  }
  ::close(fd);
}

// 24 MiB appended in frames of about a megabyte, synced now and then as the
// writer does: none of it stays in the page cache but the tails that went
// through it (a page each).
TEST_F(DirectFileCache, DirectWritesLeaveThePageCacheAlone) {
  if (!filesystemTakesDirect()) GTEST_SKIP() << "this filesystem does not take O_DIRECT";
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  const std::string header(16, 'h');
  ASSERT_EQ(::write(fd, header.data(), header.size()), 16);
  DirectFile file(fd, header);
  ASSERT_TRUE(file.direct());
  const std::string frame(1000003, 'f');
  int syncs = 0;
  for (int i = 0; i < 24; ++i) {
    ASSERT_EQ(file.append(frame.data(), frame.size()), 0);
    if (i % 5 == 4) {
      ASSERT_EQ(file.sync(), 0);
      ++syncs;
    }
  }
  ASSERT_EQ(file.sync(), 0);
  ::close(fd);
  const size_t pages = cachedPages();
  EXPECT_LE(pages, static_cast<size_t>(syncs + 2)) << "of " << (24 * frame.size() / 4096) << " pages";
  EXPECT_EQ(contents().size(), header.size() + 24 * frame.size());
}

INSTANTIATE_TEST_SUITE_P(DirectOrNot, DirectFileTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "Direct" : "Plain");
                         });

}  // namespace
}  // namespace acc::format
