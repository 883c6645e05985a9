#include "replayer/snapshot_file_system.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interpose/blobs.h"
#include "replayer/slang_path.h"

namespace spreplay {
namespace {

using ::testing::HasSubstr;

FileMap Files(std::initializer_list<std::pair<std::string, std::string>> entries) {
  FileMap files;
  for (const auto& [path, bytes] : entries)
    files[path] = std::make_shared<const std::string>(bytes);
  return files;
}

// Calls a file system method that returns a blob; the blob's text, or
// "<failed>".
template <typename Method>
std::string Call(Method method) {
  ISlangBlob* blob = nullptr;
  const SlangResult result = method(&blob);
  ComPtr<ISlangBlob> owned = ComPtr<ISlangBlob>::Adopt(blob);
  return SLANG_SUCCEEDED(result) ? BlobToString(owned.get()) : "<failed>";
}

std::string UniqueIdentity(SnapshotFileSystem& files, const char* path) {
  return Call([&](ISlangBlob** out) { return files.getFileUniqueIdentity(path, out); });
}

std::string Load(SnapshotFileSystem& files, const char* path) {
  return Call([&](ISlangBlob** out) { return files.loadFile(path, out); });
}

TEST(SlangPathTest, SimplifiesLikeSlang) {
  EXPECT_EQ(slang_path::Simplify("/a/./b/../c"), "/a/c");
  EXPECT_EQ(slang_path::Simplify("/a/b/"), "/a/b");
  EXPECT_EQ(slang_path::Simplify("/"), "/");
  EXPECT_EQ(slang_path::Simplify("/.."), "/..");
  EXPECT_EQ(slang_path::Simplify("a/.."), ".");
  EXPECT_EQ(slang_path::Simplify("../x"), "../x");
  EXPECT_EQ(slang_path::Simplify("a\\b"), "a/b");
}

TEST(SlangPathTest, CombinesAndSplitsLikeSlang) {
  EXPECT_EQ(slang_path::Combine("/inc", "user.slang"), "/inc/user.slang");
  EXPECT_EQ(slang_path::Combine("/inc/", "user.slang"), "/inc/user.slang");
  EXPECT_EQ(slang_path::Combine("", "user.slang"), "user.slang");
  EXPECT_EQ(slang_path::Combine("/inc", ""), "/inc");
  EXPECT_EQ(slang_path::ParentDirectory("/inc/user.slang"), "/inc");
  // Slang's quirk, kept: the parent of a top-level entry is "".
  EXPECT_EQ(slang_path::ParentDirectory("/inc"), "");
  EXPECT_EQ(slang_path::FileName("/inc/user.slang"), "user.slang");
}

TEST(SnapshotFileSystemTest, ServesRecordedFilesAndTheirDirectories) {
  ComPtr<SnapshotFileSystem> files = SnapshotFileSystem::Create();
  ASSERT_TRUE(files
                  ->Admit(Files({{"/rec/inc/user.slang", "import helper;"},
                                 {"/rec/inc/helper.slang", "// helper"}}))
                  .ok());
  EXPECT_EQ(Load(*files.get(), "/rec/inc/user.slang"), "import helper;");
  EXPECT_EQ(Load(*files.get(), "/rec/inc/./sub/../helper.slang"), "// helper");
  EXPECT_EQ(UniqueIdentity(*files.get(), "/rec/inc/../inc/user.slang"), "/rec/inc/user.slang");
  EXPECT_EQ(UniqueIdentity(*files.get(), "/rec/inc"), "/rec/inc");

  SlangPathType type;
  ASSERT_EQ(files->getPathType("/rec/inc/user.slang", &type), SLANG_OK);
  EXPECT_EQ(type, SLANG_PATH_TYPE_FILE);
  ASSERT_EQ(files->getPathType("/rec/inc", &type), SLANG_OK);
  EXPECT_EQ(type, SLANG_PATH_TYPE_DIRECTORY);
  ASSERT_EQ(files->getPathType("/rec", &type), SLANG_OK);
  EXPECT_EQ(type, SLANG_PATH_TYPE_DIRECTORY);
  EXPECT_EQ(files->getPathType("/rec/inc/user.slang-module", &type), SLANG_E_NOT_FOUND);

  EXPECT_EQ(Call([&](ISlangBlob** out) {
              return files->calcCombinedPath(SLANG_PATH_TYPE_FILE, "/rec/inc/user.slang",
                                             "helper.slang", out);
            }),
            "/rec/inc/helper.slang");
  EXPECT_EQ(Call([&](ISlangBlob** out) {
              return files->calcCombinedPath(SLANG_PATH_TYPE_DIRECTORY, "/rec/inc", "user.slang",
                                             out);
            }),
            "/rec/inc/user.slang");
  EXPECT_EQ(Call([&](ISlangBlob** out) {
              return files->getPath(PathKind::Display, "/rec/inc/./user.slang", out);
            }),
            "/rec/inc/user.slang");
}

TEST(SnapshotFileSystemTest, NeverReadsTheRealDisk) {
  ComPtr<SnapshotFileSystem> files = SnapshotFileSystem::Create();
  ASSERT_TRUE(files->Admit(Files({{"/rec/a.slang", "a"}})).ok());
  EXPECT_EQ(Load(*files.get(), "/proc/self/status"), "<failed>");
  EXPECT_EQ(UniqueIdentity(*files.get(), "/proc"), "<failed>");
  EXPECT_EQ(Load(*files.get(), "a.slang"), "<failed>");  // relative: no working directory
  EXPECT_EQ(files->getOSPathKind(), OSPathKind::None);
}

TEST(SnapshotFileSystemTest, AdmitRefusesContradictions) {
  ComPtr<SnapshotFileSystem> files = SnapshotFileSystem::Create();
  ASSERT_TRUE(files->Admit(Files({{"/rec/a.slang", "a"}})).ok());
  EXPECT_TRUE(files->Admit(Files({{"/rec/a.slang", "a"}, {"/rec/b.slang", "b"}})).ok());
  absl::Status changed = files->Admit(Files({{"/rec/a.slang", "A"}, {"/rec/c.slang", "c"}}));
  EXPECT_EQ(changed.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(changed.message()), HasSubstr("/rec/a.slang"));
  EXPECT_EQ(Load(*files.get(), "/rec/c.slang"), "<failed>");  // nothing was added

  // Slang was told /rec/c.slang did not exist: it may not appear later.
  absl::Status appeared = files->Admit(Files({{"/rec/c.slang", "c"}}));
  EXPECT_EQ(appeared.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(appeared.message()), HasSubstr("/rec/c.slang"));
}

TEST(SnapshotFileSystemTest, AliasesStandForSymbolicLinks) {
  ComPtr<SnapshotFileSystem> files = SnapshotFileSystem::Create();
  ASSERT_TRUE(files->Admit(Files({{"/real/inc/user.slang", "u"}})).ok());
  ASSERT_TRUE(files->AddDirectoryAlias("/link/inc", "/real/inc").ok());
  EXPECT_EQ(Load(*files.get(), "/link/inc/user.slang"), "u");
  EXPECT_EQ(UniqueIdentity(*files.get(), "/link/inc/user.slang"), "/real/inc/user.slang");
  EXPECT_FALSE(files->AddDirectoryAlias("/link/inc", "/elsewhere").ok());
}

TEST(SnapshotFileSystemTest, EnumeratesDirectories) {
  ComPtr<SnapshotFileSystem> files = SnapshotFileSystem::Create();
  ASSERT_TRUE(files->Admit(Files({{"/rec/a.slang", "a"}, {"/rec/sub/b.slang", "b"}})).ok());
  std::vector<std::string> names;
  auto collect = [](SlangPathType type, const char* name, void* user) {
    static_cast<std::vector<std::string>*>(user)->push_back(
        std::string(type == SLANG_PATH_TYPE_FILE ? "file " : "dir ") + name);
  };
  ASSERT_EQ(files->enumeratePathContents("/rec", collect, &names), SLANG_OK);
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("file a.slang", "dir sub"));
}

}  // namespace
}  // namespace spreplay
