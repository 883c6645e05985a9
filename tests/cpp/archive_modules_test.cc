// The runtime's decisions about serving modules from an archive, without
// Slang: which module a request finds, what must hold on disk for it to be
// served, and what a damaged archive does.

#include "runtime/archive_modules.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "archive/archive_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interpose/module_keys.h"
#include "interpose/path_roots.h"

namespace spreplay {
namespace {

using ::testing::HasSubstr;

constexpr const char* kToolchain = "slangpy test slang test";
constexpr const char* kHelper = "public float twice(float x) { return 2 * x; }\n";
constexpr const char* kUser = "import helper;\npublic float f(float x) { return twice(x); }\n";

CompilerOption Include(const std::string& path) {
  CompilerOption option;
  option.name = static_cast<int32_t>(slang::CompilerOptionName::Include);
  option.string0 = path;
  return option;
}

// A session whose include paths are `lib` and `kernels` below `root`.
SessionConfig Config(const std::string& root) {
  SessionConfig config;
  config.working_directory = root;
  config.options = {Include(root + "/lib"), Include(root + "/kernels")};
  return config;
}

struct Module {
  ModuleMetadata metadata;
  ComponentPtr description;
};

// A file module recorded below "/recorded": `files` are (path below the
// root, content), its own file first.
Module FileModule(const std::string& name, const std::string& requested,
                  const std::vector<std::pair<std::string, std::string>>& files,
                  const std::vector<Digest>& imports = {}) {
  const SessionConfig recorded = Config("/recorded");
  std::vector<SourceFile> dependencies;
  Module module;
  for (const auto& [path, content] : files) {
    const std::string full = "/recorded/" + path;
    dependencies.push_back({full, Sha256Of(content)});
    const RootedPath rooted = RootPath(recorded, full);
    module.metadata.files.push_back(
        {Sha256Of(content), schema::PathRoot::SEARCH_PATH, rooted.index, rooted.relative, full});
  }
  module.description =
      Component::Module(name, dependencies[0].path, requested, std::nullopt, dependencies);
  const Digest session = recorded.ContentDigest();
  module.metadata.key = IrModuleKey(kToolchain, session, *module.description);
  module.metadata.content_digest = module.description->digest;
  module.metadata.session_digest = session;
  module.metadata.name = name;
  module.metadata.requested_name = requested;
  module.metadata.file_path = module.metadata.files[0];
  module.metadata.file_path.digest = Digest{};
  module.metadata.imports = imports;
  return module;
}

class ArchiveModulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "archive-modules-XXXXXX").string();
    root_ = mkdtemp(pattern.data());
    Write("lib/helper.slang", kHelper);
    Write("kernels/user.slang", kUser);
    session_ = std::make_shared<SessionInfo>();
    session_->config = Config(root_);
    session_->digest = session_->config.ContentDigest();
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void Write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(root_ + "/" + path).parent_path());
    std::ofstream(root_ + "/" + path) << text;
  }

  // An archive holding `modules`, opened.
  std::unique_ptr<Archive> ArchiveOf(const std::vector<Module>& modules) {
    ArchiveWriter writer({kToolchain, "test", 0, "", ""});
    for (const Module& module : modules)
      writer.AddModule(module.metadata, "IR of " + module.metadata.name);
    const std::string path = root_ + "/kernels.sprk";
    EXPECT_TRUE(writer.Write(path).ok());
    absl::StatusOr<Archive> archive = Archive::Open(path);
    EXPECT_TRUE(archive.ok()) << archive.status();
    return archive.ok() ? std::make_unique<Archive>(*std::move(archive)) : nullptr;
  }

  ModuleDecision Decide(ArchiveModules& modules, const std::string& requested,
                        std::vector<ModuleFromIr>* plan, std::string* why) {
    ModuleLoadRequest request;
    request.session = session_;
    request.toolchain = kToolchain;
    request.requested_name = requested;
    ModuleFileReader reader;
    reader.file = [](const std::string& path) -> absl::StatusOr<FileContent> {
      std::ifstream in(path);
      if (!in) return absl::NotFoundError("no such file");
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      return FileContent{Sha256Of(bytes), std::make_shared<const std::string>(bytes)};
    };
    reader.string_module = [](const std::string&) { return std::nullopt; };
    return modules.DecideModule(request, reader, plan, why);
  }

  std::vector<Module> UserAndHelper() {
    Module helper = FileModule("helper", "", {{"lib/helper.slang", kHelper}});
    Module user = FileModule("user.slang", "user.slang",
                             {{"kernels/user.slang", kUser}, {"lib/helper.slang", kHelper}},
                             {helper.metadata.key});
    return {helper, user};
  }

  std::string root_;
  std::shared_ptr<SessionInfo> session_;
};

TEST_F(ArchiveModulesTest, ServesAModuleAfterItsImportsFromWhereverTheAppNowIs) {
  std::unique_ptr<Archive> archive = ArchiveOf(UserAndHelper());
  ArchiveModules modules(*archive, /*strict=*/false);
  std::vector<ModuleFromIr> plan;
  std::string why;
  ASSERT_EQ(Decide(modules, "user.slang", &plan, &why), ModuleDecision::kServe) << why;
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].name, "helper");
  EXPECT_EQ(plan[0].path, root_ + "/lib/helper.slang");
  EXPECT_EQ(plan[1].name, "user.slang");
  EXPECT_EQ(plan[1].path, root_ + "/kernels/user.slang");
  // Described as recorded: the keys of its kernels stay the recorded ones.
  EXPECT_EQ(plan[1].description->digest, UserAndHelper()[1].description->digest);
  EXPECT_EQ(std::string(static_cast<const char*>(plan[1].ir), plan[1].ir_size), "IR of user.slang");
}

TEST_F(ArchiveModulesTest, AChangedImportIsNamedAndNothingIsServed) {
  std::unique_ptr<Archive> archive = ArchiveOf(UserAndHelper());
  ArchiveModules modules(*archive, /*strict=*/false);
  Write("lib/helper.slang", "public float twice(float x) { return x + x; }\n");
  std::vector<ModuleFromIr> plan;
  std::string why;
  EXPECT_EQ(Decide(modules, "user.slang", &plan, &why), ModuleDecision::kPass);
  EXPECT_THAT(why, HasSubstr("lib/helper.slang changed"));
  EXPECT_TRUE(plan.empty());
}

TEST_F(ArchiveModulesTest, AFileBesideTheImporterWouldBeImportedInstead) {
  std::unique_ptr<Archive> archive = ArchiveOf(UserAndHelper());
  ArchiveModules modules(*archive, /*strict=*/false);
  Write("kernels/helper.slang", "public float twice(float x) { return 3 * x; }\n");
  std::vector<ModuleFromIr> plan;
  std::string why;
  EXPECT_EQ(Decide(modules, "user.slang", &plan, &why), ModuleDecision::kPass);
  EXPECT_THAT(why, HasSubstr("would now be imported from " + root_ + "/kernels/helper.slang"));
}

TEST_F(ArchiveModulesTest, ModulesImportingEachOtherAreADamagedArchiveNotACrash) {
  Module a = FileModule("a", "a", {{"lib/helper.slang", kHelper}});
  Module b = FileModule("b", "b", {{"kernels/user.slang", kUser}}, {a.metadata.key});
  a.metadata.imports = {b.metadata.key};
  std::unique_ptr<Archive> archive = ArchiveOf({a, b});
  ArchiveModules modules(*archive, /*strict=*/false);
  std::vector<ModuleFromIr> plan;
  std::string why;
  EXPECT_EQ(Decide(modules, "b", &plan, &why), ModuleDecision::kPass);
  EXPECT_THAT(why, HasSubstr("damaged"));
}

TEST_F(ArchiveModulesTest, StrictModeRefusesAndTheSummarySaysSo) {
  std::unique_ptr<Archive> archive = ArchiveOf(UserAndHelper());
  ArchiveModules modules(*archive, /*strict=*/true);
  std::vector<ModuleFromIr> plan;
  std::string why;
  EXPECT_EQ(Decide(modules, "other.slang", &plan, &why), ModuleDecision::kRefuse);
  EXPECT_THAT(why, HasSubstr("SLANGPY_KERNELS_STRICT_MODULES"));
  ASSERT_EQ(modules.misses().size(), 1u);
  EXPECT_TRUE(modules.misses()[0].refused);
}

TEST_F(ArchiveModulesTest, AnotherToolchainKeepsTheModuleCache) {
  std::unique_ptr<Archive> archive = ArchiveOf(UserAndHelper());
  ArchiveModules modules(*archive, /*strict=*/false);
  modules.OnToolchainKnown(kToolchain, "test");
  EXPECT_TRUE(modules.ServesModulesOf(Config("/recorded").ContentDigest()));
  modules.OnToolchainKnown("slangpy 9 slang 9", "9");
  EXPECT_FALSE(modules.ServesModulesOf(Config("/recorded").ContentDigest()));
}

}  // namespace
}  // namespace spreplay
