// The modules stage's outcome, remembered per session configuration: an
// unchanged configuration takes it from the cache with the same archive, and
// any change the stage would see (a file's content, where the files lie)
// names another entry. Refusals that are Slang's verdict on the trace are
// remembered with it. Each part's evidence, and the parts a configuration was
// verified in, round-trip; a damaged entry is a miss.

#include "compiler/module_stage_cache.h"

#include <algorithm>
#include <filesystem>
#include <functional>
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
using ::testing::ElementsAre;
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

PartEvidence LibraryAndUser() {
  PartEvidence evidence;
  evidence.modules.push_back({LibraryModule(), {Sha256Of("slangpy"), "slangpy"}, "", {}});
  ModuleMetadata user = LibraryModule();
  user.key = Sha256Of("user key");
  user.name = "user";
  evidence.modules.push_back(
      {user, {Sha256Of("user"), "user"}, "user.slang declares a user attribute", {0}});
  evidence.programs.push_back({true, false, "", {0, 1}});
  evidence.programs.push_back({false, false, "module 'user' rebuilt over IR: differs", {1}});
  return evidence;
}

TEST_F(ModuleStageOutcomeTest, APartsEvidenceRoundTrips) {
  ASSERT_TRUE(StoreModulePartEvidence(cache_, name_, LibraryAndUser()).ok());

  const std::optional<PartEvidence> loaded = LoadModulePartEvidence(cache_, name_);
  ASSERT_TRUE(loaded.has_value());
  ASSERT_EQ(loaded->modules.size(), 2u);
  EXPECT_EQ(loaded->modules[0].metadata.key, LibraryModule().key);
  EXPECT_EQ(loaded->modules[0].metadata.files[0].recorded_path,
            "/site-packages/slangpy/slang/core.slang");
  EXPECT_EQ(loaded->modules[1].node, (ModuleNodeKey{Sha256Of("user"), "user"}));
  EXPECT_EQ(loaded->modules[1].refusal, "user.slang declares a user attribute");
  EXPECT_EQ(loaded->modules[1].imports, std::vector<size_t>{0});
  ASSERT_EQ(loaded->programs.size(), 2u);
  EXPECT_TRUE(loaded->programs[0].kernel);
  EXPECT_EQ(loaded->programs[0].modules, (std::vector<size_t>{0, 1}));
  EXPECT_FALSE(loaded->programs[1].kernel);
  EXPECT_EQ(loaded->programs[1].failure, "module 'user' rebuilt over IR: differs");
}

TEST_F(ModuleStageOutcomeTest, APartsEvidenceThatIsForeignOrIndexesNoModuleIsAMiss) {
  PartEvidence evidence = LibraryAndUser();
  evidence.programs[1].modules.push_back(2);
  ASSERT_TRUE(StoreModulePartEvidence(cache_, name_, evidence).ok());
  EXPECT_EQ(LoadModulePartEvidence(cache_, name_), std::nullopt);
  evidence = LibraryAndUser();
  evidence.modules[0].imports.push_back(7);
  ASSERT_TRUE(StoreModulePartEvidence(cache_, name_, evidence).ok());
  EXPECT_EQ(LoadModulePartEvidence(cache_, name_), std::nullopt);
  ASSERT_TRUE(cache_.Put(name_, std::string(64, '\xff')).ok());
  EXPECT_EQ(LoadModulePartEvidence(cache_, name_), std::nullopt);
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
    return RecordWith([&](slang::IGlobalSession* live) {
      RecordCallSites(live, {WheelSlangDirectory(), sources.path().string()}, {kWrapperBody});
    });
  }

  // Records what `record` compiles in a new global session into its own trace.
  std::string RecordWith(const std::function<void(slang::IGlobalSession*)>& record) {
    const std::string trace = (work_.path() / fmt::format("trace-{}.capnp", traces_++)).string();
    absl::StatusOr<std::unique_ptr<TraceRecorder>> recorder =
        TraceRecorder::Open(trace, R"({"pid": 1})");
    EXPECT_TRUE(recorder.ok()) << recorder.status();
    if (!recorder.ok()) return trace;
    Switch().Use(recorder->get());
    ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
    record(live.get());
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

// The app loads noise.slang, which builds no kernel and imports tuned.slang,
// which declares a user attribute: the part that proves noise by its layout
// refuses both. Then the app adds a call site built with noise.
class PromotedModuleTest : public ModuleStageCacheCompileTest {
 protected:
  static constexpr const char* kNoise = R"(import tuned;
public float noise(float x) { return tuned_mul(x, 5.0f); }
)";
  static constexpr const char* kTuned = R"([__AttributeUsage(_AttributeTargets.Function)]
struct TunedAttribute { int level; };
[Tuned(2)]
public float tuned_mul(float a, float b) { return a * b + 1.0f; }
)";
  static constexpr const char* kNoiseWrapper = R"(import slangpy;
import noise;
[shader("compute")]
[numthreads(32, 1, 1)]
void compute_main(uint3 tid: SV_DispatchThreadID, uniform RWStructuredBuffer<float> data) {
  data[tid.x] = noise(data[tid.x]);
}
)";

  std::string RecordApp(const TempDir& sources, bool with_noise_call_site) {
    return RecordWith([&](slang::IGlobalSession* live) {
      RecordSession(live, {WheelSlangDirectory(), sources.path().string()}, 0,
                    [&](slang::ISession* session) -> absl::Status {
                      absl::StatusOr<std::string> code =
                          CompileCallSite(session, "user.slang", kFirstCallSite, kWrapperBody);
                      if (!code.ok()) return code.status();
                      ComPtr<ISlangBlob> diagnostics;
                      if (!session->loadModule("noise.slang", diagnostics.WriteRef()))
                        return absl::InternalError("noise.slang: " + Diagnostics(diagnostics));
                      if (with_noise_call_site)
                        code =
                            CompileCallSite(session, "noise.slang", kNoiseCallSite, kNoiseWrapper);
                      return code.status();
                    });
    });
  }

  static std::vector<std::string> UnservedOf(const Compiled& compiled) {
    absl::StatusOr<Archive> archive = Archive::Open(compiled.archive_path);
    EXPECT_TRUE(archive.ok()) << archive.status();
    std::vector<std::string> unserved;
    if (!archive.ok()) return unserved;
    for (const auto module : archive->index().getUnservedModules())
      unserved.push_back(fmt::format("{}: {}", module.getName().cStr(), module.getReason().cStr()));
    std::sort(unserved.begin(), unserved.end());
    return unserved;
  }

  static std::vector<std::string> SerializedParts(const Compiled& compiled) {
    std::vector<std::string> labels;
    for (const TimelineSpan& span : compiled.report.timeline)
      if (span.stage == "serialize") labels.push_back(span.label);
    return labels;
  }

  static constexpr const char* kFirstCallSite = "call_site_first";
  static constexpr const char* kNoiseCallSite = "call_site_noise";
};

TEST_F(PromotedModuleTest, ARefusingPartIsDecidedAgainAndOnlyTheNewCallSiteIsSerialized) {
  TempDir sources;
  WriteSources(sources);
  sources.Write("noise.slang", kNoise);
  sources.Write("tuned.slang", kTuned);
  const Compiled before = Compile(RecordApp(sources, false));
  EXPECT_GT(before.report.modules_refused, 0u);
  EXPECT_THAT(UnservedOf(before), Contains(StartsWith("noise")));
  const std::string added = RecordApp(sources, true);
  const Compiled after = Compile(added);
  EXPECT_THAT(SerializedParts(after), ElementsAre(StartsWith("1 program(s)")));

  cache_.Remove();  // what a compile without the cache archives
  const Compiled cold = Compile(added);
  EXPECT_EQ(SerializedParts(cold).size(), 1u);
  EXPECT_THAT(SerializedParts(cold), ElementsAre(StartsWith("2 program(s)")));
  EXPECT_EQ(ModulesOf(after), ModulesOf(cold));
  EXPECT_EQ(UnservedOf(after), UnservedOf(cold));
  EXPECT_THAT(UnservedOf(after), Contains(StartsWith("tuned")));
}

}  // namespace
}  // namespace spreplay
