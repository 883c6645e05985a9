#include "interpose/path_roots.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

CompilerOption Include(const std::string& path) {
  CompilerOption option;
  option.name = static_cast<int32_t>(slang::CompilerOptionName::Include);
  option.string0 = path;
  return option;
}

SessionConfig Config(const std::string& venv, const std::string& app,
                     const std::vector<std::string>& cache_directories = {}) {
  SessionConfig config;
  config.slangpy_directory = venv + "/slangpy";
  config.working_directory = app;
  for (const std::string& directory : cache_directories)
    config.options.push_back(Include(directory));
  config.options.push_back(Include(venv + "/slangpy/slang"));
  config.options.push_back(Include("."));
  return config;
}

TEST(PathRootsTest, AFileKeepsItsPlaceBelowTheInnermostRoot) {
  const SessionConfig recorded = Config("/old/venv", "/old/app");
  const SessionConfig moved = Config("/new/venv", "/srv/app");
  const RootedPath library = RootPath(recorded, "/old/venv/slangpy/slang/slangpy.slang");
  EXPECT_EQ(library.root, PathRoot::kSearchPath);
  EXPECT_EQ(library.relative, "slangpy.slang");
  EXPECT_EQ(PathUnderRoot(moved, library), "/new/venv/slangpy/slang/slangpy.slang");
  const RootedPath app = RootPath(recorded, "/old/app/shaders/noise.slang");
  EXPECT_EQ(app.relative, "shaders/noise.slang");
  EXPECT_EQ(PathUnderRoot(moved, app), "/srv/app/shaders/noise.slang");
  const RootedPath header = RootPath(recorded, "/old/venv/slangpy/include/x.h");
  EXPECT_EQ(header.root, PathRoot::kSlangpy);
  EXPECT_EQ(PathUnderRoot(moved, header), "/new/venv/slangpy/include/x.h");
  const RootedPath elsewhere = RootPath(recorded, "/opt/shared/lib.slang");
  EXPECT_EQ(elsewhere.root, PathRoot::kAbsolute);
  EXPECT_EQ(PathUnderRoot(moved, elsewhere), "/opt/shared/lib.slang");
}

TEST(PathRootsTest, TheModuleCachesDirectoriesAheadOfTheOthersChangeNothing) {
  const SessionConfig recorded = Config("/venv", "/app");
  const SessionConfig cached = Config("/venv", "/app", {"/cache/uid/0", "/cache/uid/1"});
  const RootedPath library = RootPath(recorded, "/venv/slangpy/slang/slangpy.slang");
  EXPECT_EQ(PathUnderRoot(cached, library), "/venv/slangpy/slang/slangpy.slang");
  EXPECT_EQ(PathUnderRoot(cached, RootPath(cached, "/app/user.slang")), "/app/user.slang");
}

TEST(PathRootsTest, ListsWhereSlangWouldLookFirst) {
  const SessionConfig config = Config("/venv", "/app");
  EXPECT_THAT(PathsSearchedBefore(config, RootPath(config, "/app/user.slang")),
              ::testing::ElementsAre("/venv/slangpy/slang/user.slang"));
  EXPECT_THAT(PathsSearchedBefore(config, RootPath(config, "/venv/slangpy/slang/slangpy.slang")),
              ::testing::IsEmpty());
}

TEST(PathRootsTest, ARootTheSessionLacksResolvesToNothing) {
  SessionConfig fewer = Config("/venv", "/app");
  const RootedPath app = RootPath(fewer, "/app/user.slang");
  fewer.options.clear();
  EXPECT_EQ(PathUnderRoot(fewer, app), "");
}

TEST(PathRootsTest, AModuleRequestedByPathOutsideEveryRootRootsItsDirectory) {
  SessionConfig recorded = Config("/old/venv", "/old/app");
  recorded.options.pop_back();  // no "." search path: /old/app is the working directory only
  // sgl's load_program("/data/shaders/x.slang") and one below it; /data/shaders-b is another.
  const std::vector<std::string> directories = RequestDirectories(
      recorded, {"/data/shaders/x.slang", "/data/shaders/sub/y.slang", "/data/shaders-b/z.slang",
                 "/old/venv/slangpy/slang/slangpy.slang", "/old/app/w.slang"});
  EXPECT_THAT(directories, ::testing::ElementsAre("/data/shaders", "/data/shaders-b", "/old/app"));
  const RootedPath helper = RootPath(recorded, "/data/shaders/sub/helper.slang", directories);
  EXPECT_EQ(helper.root, PathRoot::kRequestDirectory);
  EXPECT_EQ(helper.index, 0u);
  EXPECT_EQ(helper.relative, "sub/helper.slang");
  // Found where the request that found its module names now; nowhere for another.
  EXPECT_EQ(PathUnderRoot(recorded, helper, 0, "/new/shaders"), "/new/shaders/sub/helper.slang");
  EXPECT_EQ(PathUnderRoot(recorded, helper, 1, "/new/shaders"), "");
  EXPECT_EQ(PathUnderRoot(recorded, helper), "");
  // Other roots rank first, as before.
  EXPECT_EQ(RootPath(recorded, "/old/venv/slangpy/slang/slangpy.slang", directories).root,
            PathRoot::kSearchPath);
}

}  // namespace
}  // namespace spreplay
