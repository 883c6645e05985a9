#include "compiler/compile_cache.h"

#include <filesystem>
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

}  // namespace
}  // namespace spreplay
