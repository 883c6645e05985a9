#include "compiler/compile_cache.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "compiler/scratch_dir.h"
#include "compiler/tool_identity.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

class CompileCacheTest : public ::testing::Test {
 protected:
  // The file of the entry named `name`: the cache's only file whose name is its hex.
  std::filesystem::path FileOf(const Digest& name) const {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_.path()))
      if (entry.path().filename() == name.ToHex()) return entry.path();
    return {};
  }
  // Marks `file` as last used `age` ago.
  static void Age(const std::filesystem::path& file, std::chrono::seconds age) {
    std::filesystem::last_write_time(file, std::filesystem::file_time_type::clock::now() - age);
  }
  ScratchDir dir_ = *ScratchDir::Create("compile_cache_test_");
};

// The cache's verdicts are keyed on it: the version alone would let two
// builds of one version share them.
TEST(ToolIdentityTest, NamesTheVersionAndADigestOfTheSources) {
  const std::string_view identity = ToolIdentity();
  const std::string_view version = SPREPLAY_VERSION "+";
  ASSERT_TRUE(identity.starts_with(version)) << identity;
  const std::string_view digest = identity.substr(version.size());
  EXPECT_EQ(digest.size(), 64u) << identity;
  EXPECT_EQ(digest.find_first_not_of("0123456789abcdef"), std::string_view::npos) << identity;
}

TEST_F(CompileCacheTest, PutFirstKeepsTheFirstEntryAndHandsItToEveryLaterWriter) {
  const CompileCache cache(dir_.path());
  const Digest name = Sha256Of("module key");
  absl::StatusOr<std::string> first = cache.PutFirst(name, "first IR");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, "first IR");
  absl::StatusOr<std::string> second = cache.PutFirst(name, "second IR");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*second, "first IR");
  EXPECT_EQ(cache.Get(name), "first IR");
}

TEST_F(CompileCacheTest, ConcurrentWritersAllEndWithOneEntry) {
  // Eight compilers racing to store one module's IR, each serialized a little
  // differently: every one must adopt the same bytes, and no temporary file
  // may remain.
  const Digest name = Sha256Of("module key");
  std::vector<std::string> kept(8);
  std::vector<std::thread> writers;
  for (size_t i = 0; i < kept.size(); ++i) {
    writers.emplace_back([&, i] {
      const CompileCache cache(dir_.path());
      absl::StatusOr<std::string> stored = cache.PutFirst(name, fmt::format("IR {}", i));
      kept[i] = stored.ok() ? *stored : "error";
    });
  }
  for (std::thread& writer : writers) writer.join();
  for (const std::string& bytes : kept) EXPECT_EQ(bytes, kept[0]);
  EXPECT_NE(kept[0], "error");
  size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_.path()))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 1u);
}

TEST_F(CompileCacheTest, ADamagedEntryIsReplaced) {
  const CompileCache cache(dir_.path());
  const Digest name = Sha256Of("module key");
  ASSERT_TRUE(cache.Put(name, "good IR").ok());
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_.path())) {
    if (entry.is_regular_file()) std::filesystem::resize_file(entry.path(), 10);
  }
  EXPECT_EQ(cache.Get(name), std::nullopt);
  absl::StatusOr<std::string> stored = cache.PutFirst(name, "fresh IR");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(*stored, "fresh IR");
  EXPECT_EQ(cache.Get(name), "fresh IR");
}

TEST_F(CompileCacheTest, TrimRemovesTheEntriesUsedLongestAgoUntilTheCacheFits) {
  const CompileCache cache(dir_.path());
  const std::string kilobyte(1000, 'x');
  const Digest oldest = Sha256Of("oldest"), older = Sha256Of("older"), newest = Sha256Of("newest");
  ASSERT_TRUE(cache.Put(oldest, kilobyte).ok());
  ASSERT_TRUE(cache.Put(older, kilobyte).ok());
  ASSERT_TRUE(cache.Put(newest, kilobyte).ok());
  Age(FileOf(oldest), std::chrono::hours(3));
  Age(FileOf(older), std::chrono::hours(2));
  Age(FileOf(newest), std::chrono::hours(1));
  // A hit counts as a use: the oldest write is now the entry used last.
  ASSERT_EQ(cache.Get(oldest), kilobyte);
  const uint64_t entry_bytes = std::filesystem::file_size(FileOf(newest));

  absl::StatusOr<CompileCache::TrimOutcome> trimmed = cache.Trim(2 * entry_bytes);
  ASSERT_TRUE(trimmed.ok()) << trimmed.status();
  EXPECT_EQ(trimmed->bytes_before, 3 * entry_bytes);
  EXPECT_EQ(trimmed->bytes_after, 2 * entry_bytes);
  EXPECT_EQ(trimmed->entries_removed, 1u);
  EXPECT_EQ(cache.Get(older), std::nullopt);
  EXPECT_EQ(cache.Get(oldest), kilobyte);
  EXPECT_EQ(cache.Get(newest), kilobyte);
}

TEST_F(CompileCacheTest, TrimLeavesACacheWithinItsLimitOrWithNoLimitAsItIs) {
  const CompileCache cache(dir_.path());
  const Digest name = Sha256Of("entry");
  ASSERT_TRUE(cache.Put(name, std::string(1000, 'x')).ok());
  for (const uint64_t limit : {uint64_t{1} << 20, uint64_t{0}}) {
    absl::StatusOr<CompileCache::TrimOutcome> trimmed = cache.Trim(limit);
    ASSERT_TRUE(trimmed.ok()) << trimmed.status();
    EXPECT_EQ(trimmed->entries_removed, 0u) << limit;
    EXPECT_EQ(trimmed->bytes_after, trimmed->bytes_before) << limit;
  }
  EXPECT_TRUE(cache.Get(name).has_value());
  // A cache nothing was ever stored in has nothing to trim.
  absl::StatusOr<CompileCache::TrimOutcome> empty =
      CompileCache((std::filesystem::path(dir_.path()) / "never-used").string()).Trim(1);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->bytes_before, 0u);
}

TEST_F(CompileCacheTest, TrimRemovesTheTemporariesOfWritersThatDiedButNotOfThoseWriting) {
  const CompileCache cache(dir_.path());
  const Digest name = Sha256Of("entry");
  ASSERT_TRUE(cache.Put(name, "bytes").ok());
  const std::filesystem::path entry = FileOf(name);
  const std::filesystem::path abandoned = entry.string() + ".tmp.1.2";
  const std::filesystem::path in_progress = entry.string() + ".tmp.3.4";
  std::ofstream(abandoned) << "half an entry";
  std::ofstream(in_progress) << "half an entry";
  Age(abandoned, std::chrono::hours(2));

  absl::StatusOr<CompileCache::TrimOutcome> trimmed = cache.Trim(0);
  ASSERT_TRUE(trimmed.ok()) << trimmed.status();
  EXPECT_FALSE(std::filesystem::exists(abandoned));
  EXPECT_TRUE(std::filesystem::exists(in_progress));
  EXPECT_EQ(trimmed->bytes_before, std::filesystem::file_size(entry));
  EXPECT_EQ(cache.Get(name), "bytes");
}

TEST(ParseCacheSizeTest, ReadsBytesAndBinaryUnits) {
  EXPECT_EQ(ParseCacheSize("0").value_or(1), 0u);
  EXPECT_EQ(ParseCacheSize("4096").value_or(0), 4096u);
  EXPECT_EQ(ParseCacheSize("500M").value_or(0), uint64_t{500} << 20);
  EXPECT_EQ(ParseCacheSize("20g").value_or(0), uint64_t{20} << 30);
  EXPECT_EQ(ParseCacheSize("1T").value_or(0), uint64_t{1} << 40);
  for (const char* bad : {"", "G", "5X", "-1", "1.5G", "5 G", "99999999999T"})
    EXPECT_FALSE(ParseCacheSize(bad).ok()) << bad;
}

}  // namespace
}  // namespace spreplay
