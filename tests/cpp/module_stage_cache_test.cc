// The modules stage's outcome, remembered per session configuration: an
// unchanged configuration takes it from the cache with the same archive, and
// any change the stage would see (a file's content, where the files lie)
// names another entry. Refusals that are Slang's verdict on the trace are
// remembered with it. Each part's outcome, and the parts a configuration was
// verified in, round-trip; a damaged entry is a miss.

#include "compiler/module_stage_cache.h"

#include <filesystem>
#include <string>
#include <vector>

#include "archive/module_entry.h"
#include "common/whole_file.h"
#include "compiler/scratch_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cpp/record_and_compile.h"

namespace spreplay {
namespace {

using ::testing::AnyOf;
using ::testing::Contains;
using ::testing::Each;
using ::testing::Field;
using ::testing::Not;
using ::testing::StartsWith;

ModuleMetadata LibraryModule() {
  ModuleMetadata metadata;
  metadata.key = Sha256Of("module key");
  metadata.content_digest = Sha256Of("content");
  metadata.session_digest = Sha256Of("session");
  metadata.name = "slangpy";
  metadata.requested_name = "slangpy";
  metadata.file_path = {Digest{}, schema::PathRoot::SLANGPY, 0, "slang/slangpy.slang",
                        "/site-packages/slangpy/slang/slangpy.slang"};
  metadata.files.push_back({Sha256Of("file"), schema::PathRoot::SLANGPY, 0, "slang/core.slang",
                            "/site-packages/slangpy/slang/core.slang"});
  metadata.imports.push_back(Sha256Of("imported key"));
  metadata.verified_by = schema::ModuleVerification::LAYOUT;
  return metadata;
}

class ModuleStageOutcomeTest : public ::testing::Test {
 protected:
  ScratchDir dir_ = *ScratchDir::Create("module_stage_cache_test_");
  CompileCache cache_{dir_.path()};
  Digest name_ = Sha256Of("outcome");
};

TEST_F(ModuleStageOutcomeTest, RoundTripsWithEachModulesVerifiedIr) {
  GroupOutcome outcome;
  outcome.archived.emplace_back(LibraryModule(), "IR bytes");
  outcome.refused.push_back({Sha256Of("session"), "user", "its kernel differs"});
  ASSERT_TRUE(cache_.Put(VerifiedIrName(LibraryModule().key), "IR bytes").ok());
  ASSERT_TRUE(StoreModuleStageOutcome(cache_, name_, outcome).ok());

  const std::optional<GroupOutcome> loaded = LoadModuleStageOutcome(cache_, name_);
  ASSERT_TRUE(loaded.has_value());
  ASSERT_EQ(loaded->archived.size(), 1u);
  const ModuleMetadata& module = loaded->archived[0].first;
  EXPECT_EQ(loaded->archived[0].second, "IR bytes");
  EXPECT_EQ(module.key, LibraryModule().key);
  EXPECT_EQ(module.name, "slangpy");
  EXPECT_EQ(module.file_path.relative_path, "slang/slangpy.slang");
  ASSERT_EQ(module.files.size(), 1u);
  EXPECT_EQ(module.files[0].digest, Sha256Of("file"));
  EXPECT_EQ(module.files[0].recorded_path, "/site-packages/slangpy/slang/core.slang");
  EXPECT_EQ(module.imports, LibraryModule().imports);
  EXPECT_EQ(module.verified_by, schema::ModuleVerification::LAYOUT);
  ASSERT_EQ(loaded->refused.size(), 1u);
  EXPECT_EQ(loaded->refused[0].name, "user");
  EXPECT_EQ(loaded->refused[0].reason, "its kernel differs");
}

TEST_F(ModuleStageOutcomeTest, AnOutcomeWhoseIrIsGoneIsAMiss) {
  GroupOutcome outcome;
  outcome.archived.emplace_back(LibraryModule(), "IR bytes");
  ASSERT_TRUE(StoreModuleStageOutcome(cache_, name_, outcome).ok());
  EXPECT_EQ(LoadModuleStageOutcome(cache_, name_), std::nullopt);
}

TEST_F(ModuleStageOutcomeTest, AForeignEntryIsAMiss) {
  ASSERT_TRUE(cache_.Put(name_, std::string(64, '\xff')).ok());
  EXPECT_EQ(LoadModuleStageOutcome(cache_, name_), std::nullopt);
  ASSERT_TRUE(cache_.Put(name_, "odd size").ok());
  EXPECT_EQ(LoadModuleStageOutcome(cache_, name_), std::nullopt);
}

TEST_F(ModuleStageOutcomeTest, APartsOutcomeRoundTripsWithItsRefusalsKeysAndModulesLeftToKernels) {
  PartitionOutcome outcome;
  outcome.archived.emplace_back(LibraryModule(), "IR bytes");
  outcome.refused.emplace_back(Sha256Of("user key"),
                               UnservedModule{Sha256Of("session"), "user", "its kernel differs"});
  const std::vector<ModuleNodeKey> left = {{Sha256Of("app"), "app"}};
  ASSERT_TRUE(cache_.Put(VerifiedIrName(LibraryModule().key), "IR bytes").ok());
  ASSERT_TRUE(StoreModulePartOutcome(cache_, name_, outcome, left).ok());

  const std::optional<RememberedPart> loaded = LoadModulePartOutcome(cache_, name_);
  ASSERT_TRUE(loaded.has_value());
  ASSERT_EQ(loaded->outcome.archived.size(), 1u);
  EXPECT_EQ(loaded->outcome.archived[0].first.key, LibraryModule().key);
  EXPECT_EQ(loaded->outcome.archived[0].second, "IR bytes");
  ASSERT_EQ(loaded->outcome.refused.size(), 1u);
  EXPECT_EQ(loaded->outcome.refused[0].first, Sha256Of("user key"));
  EXPECT_EQ(loaded->outcome.refused[0].second.reason, "its kernel differs");
  EXPECT_EQ(loaded->left_to_kernels, left);
}

TEST_F(ModuleStageOutcomeTest, APartsOutcomeWhoseIrIsGoneOrWhoseEntryIsForeignIsAMiss) {
  PartitionOutcome outcome;
  outcome.archived.emplace_back(LibraryModule(), "IR bytes");
  ASSERT_TRUE(StoreModulePartOutcome(cache_, name_, outcome, {}).ok());
  EXPECT_EQ(LoadModulePartOutcome(cache_, name_), std::nullopt);
  ASSERT_TRUE(cache_.Put(name_, std::string(64, '\xff')).ok());
  EXPECT_EQ(LoadModulePartOutcome(cache_, name_), std::nullopt);
}

TEST_F(ModuleStageOutcomeTest, TheConfigurationsPartsRoundTrip) {
  SessionGroup group;
  group.content = Sha256Of("session");
  group.toolchain = "slangpy 0.43.1 slang 2026.12";
  EXPECT_TRUE(LoadModuleStageParts(cache_, group).empty());
  const std::vector<std::vector<PartProgram>> parts = {
      {{Sha256Of("kernel 1"), std::nullopt},
       {Sha256Of("module"), ModuleNodeKey{Sha256Of("m"), "m"}}},
      {{Sha256Of("kernel 2"), std::nullopt}}};
  ASSERT_TRUE(StoreModuleStageParts(cache_, group, parts).ok());

  const std::vector<std::vector<PartProgram>> loaded = LoadModuleStageParts(cache_, group);
  ASSERT_EQ(loaded.size(), 2u);
  ASSERT_EQ(loaded[0].size(), 2u);
  EXPECT_EQ(loaded[0][0].identity, Sha256Of("kernel 1"));
  EXPECT_EQ(loaded[0][0].unused_module, std::nullopt);
  EXPECT_EQ(loaded[0][1].unused_module, parts[0][1].unused_module);
  ASSERT_EQ(loaded[1].size(), 1u);
  EXPECT_EQ(loaded[1][0].identity, Sha256Of("kernel 2"));
  // Another configuration remembers its own.
  group.content = Sha256Of("another session");
  EXPECT_TRUE(LoadModuleStageParts(cache_, group).empty());
}

// A call site of user.slang (which imports helper.slang) over slangpy's
// library, recorded from a directory of sources, compiled with one cache.
class ModuleStageCacheCompileTest : public ::testing::Test {
 protected:
  void SetUp() override { Switch(); }

  static void WriteSources(const TempDir& sources, const char* helper = kHelperModule) {
    sources.Write("user.slang", kUserModule);
    sources.Write("helper.slang", helper);
  }

  // Records the call site from `sources` into its own trace.
  std::string Record(const TempDir& sources) {
    const std::string trace = (work_.path() / fmt::format("trace-{}.capnp", traces_++)).string();
    absl::StatusOr<std::unique_ptr<TraceRecorder>> recorder =
        TraceRecorder::Open(trace, R"({"pid": 1})");
    EXPECT_TRUE(recorder.ok()) << recorder.status();
    if (!recorder.ok()) return trace;
    Switch().Use(recorder->get());
    ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
    RecordCallSites(live.get(), {WheelSlangDirectory(), sources.path().string()}, {kWrapperBody});
    Switch().Use(nullptr);
    return trace;
  }

  struct Compiled {
    CompileReport report;
    std::string archive_path;
  };

  Compiled Compile(const std::string& trace_path) {
    absl::StatusOr<Trace> trace = Trace::Read(trace_path);
    EXPECT_TRUE(trace.ok()) << trace.status();
    CompileOptions options;
    options.arches = {90};
    options.jobs = 1;
    options.cache_directory = cache_.path().string();
    Compiled compiled;
    compiled.archive_path = (work_.path() / fmt::format("kernels-{}.sprk", archives_++)).string();
    absl::StatusOr<CompileReport> report = CompileTrace(*trace, compiled.archive_path, options);
    EXPECT_TRUE(report.ok()) << report.status();
    if (report.ok()) compiled.report = *std::move(report);
    EXPECT_EQ(compiled.report.failed(), 0u);
    EXPECT_GT(compiled.report.modules_archived, 0u);
    return compiled;
  }

  // Each archived module's name, key, and files with their recorded paths, in index order.
  static std::vector<std::string> ModulesOf(const Compiled& compiled) {
    absl::StatusOr<Archive> archive = Archive::Open(compiled.archive_path);
    EXPECT_TRUE(archive.ok()) << archive.status();
    std::vector<std::string> modules;
    if (!archive.ok()) return modules;
    for (const auto entry : archive->index().getModules()) {
      const ModuleMetadata metadata = ModuleMetadataOf(entry);
      std::string described = fmt::format("{} {} {}", metadata.name, metadata.key.ToHex(),
                                          metadata.file_path.recorded_path);
      for (const ArchivedModuleFile& file : metadata.files)
        described += fmt::format(" {}={}", file.recorded_path, file.digest.ToHex());
      modules.push_back(std::move(described));
    }
    return modules;
  }

  // Where the archive says the app's own files lie.
  static std::vector<std::string> FilesOf(const Compiled& compiled) {
    absl::StatusOr<Archive> archive = Archive::Open(compiled.archive_path);
    std::vector<std::string> files;
    if (!archive.ok()) return files;
    for (const auto entry : archive->index().getModules()) {
      for (const ArchivedModuleFile& file : ModuleMetadataOf(entry).files) {
        const std::string name = std::filesystem::path(file.recorded_path).filename().string();
        if (name == "user.slang" || name == "helper.slang") files.push_back(file.recorded_path);
      }
    }
    return files;
  }

  TempDir work_, cache_;
  size_t traces_ = 0, archives_ = 0;
};

TEST_F(ModuleStageCacheCompileTest, AnUnchangedTraceTakesItsModulesFromTheCache) {
  TempDir sources;
  WriteSources(sources);
  const std::string trace = Record(sources);
  const Compiled first = Compile(trace);
  EXPECT_EQ(first.report.module_groups_cached, 0u);
  const Compiled second = Compile(trace);
  EXPECT_EQ(second.report.module_groups, first.report.module_groups);
  EXPECT_EQ(second.report.module_groups_cached, second.report.module_groups);
  EXPECT_EQ(second.report.modules_archived, first.report.modules_archived);
  EXPECT_EQ(ModulesOf(second), ModulesOf(first));
  // Nor is any SASS built, read or packed: each kernel's fatbin is cached whole.
  EXPECT_THAT(first.report.timeline, Contains(Field(&TimelineSpan::stage, "pack")));
  EXPECT_THAT(second.report.timeline,
              Each(Field(&TimelineSpan::stage, Not(AnyOf("sass", "pack")))));
  // The IR too: the archives are the same bytes.
  EXPECT_EQ(ReadFile(second.archive_path).value_or(""), ReadFile(first.archive_path).value_or("-"));
}

// A module declaring a user attribute is refused by every compile of the
// trace (module_parts.cc): Slang's verdict on the sources, remembered with
// the rest, so the unchanged trace loads nothing from source again.
TEST_F(ModuleStageCacheCompileTest, AnUnchangedTraceTakesItsRefusalsFromTheCacheToo) {
  TempDir sources;
  WriteSources(sources, R"([__AttributeUsage(_AttributeTargets.Function)]
struct TunedAttribute { int level; };
[Tuned(2)]
public float helper_mul(float a, float b) { return a * b + 1.0f; }
)");
  const std::string trace = Record(sources);
  const Compiled first = Compile(trace);
  EXPECT_GT(first.report.modules_refused, 0u);
  EXPECT_EQ(first.report.module_groups_cached, 0u);
  const Compiled second = Compile(trace);
  EXPECT_EQ(second.report.module_groups_cached, second.report.module_groups);
  EXPECT_EQ(second.report.modules_refused, first.report.modules_refused);
  EXPECT_EQ(second.report.module_seconds, 0.0);
  // The same modules left to the source, with the same reasons.
  EXPECT_EQ(ReadFile(second.archive_path).value_or(""), ReadFile(first.archive_path).value_or("-"));
}

TEST_F(ModuleStageCacheCompileTest, TheSameSourcesElsewhereAreVerifiedWithTheirOwnPaths) {
  TempDir here, there;
  WriteSources(here);
  WriteSources(there);
  Compile(Record(here));
  const Compiled moved = Compile(Record(there));
  EXPECT_EQ(moved.report.module_groups_cached, 0u);
  const std::vector<std::string> files = FilesOf(moved);
  ASSERT_FALSE(files.empty());
  EXPECT_THAT(files, Each(StartsWith(there.path().string())));
}

TEST_F(ModuleStageCacheCompileTest, AChangedFileIsVerifiedAgain) {
  TempDir sources;
  WriteSources(sources);
  const Compiled before = Compile(Record(sources));
  WriteSources(sources, R"(public float helper_mul(float a, float b) { return a * b + 2.0f; }
)");
  const Compiled after = Compile(Record(sources));
  EXPECT_EQ(after.report.module_groups_cached, 0u);
  EXPECT_NE(ModulesOf(after), ModulesOf(before));
}

}  // namespace
}  // namespace spreplay
