// The replayer against real Slang, no GPU: kernels compiled the way sgl
// compiles them for a CUDA device, observed by the real Slang hooks, must
// come out of the replayer byte-identical, from the captured data alone,
// after the source files are gone.

#include "replayer/replayer.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interpose/blobs.h"
#include "interpose/hook_listener.h"
#include "interpose/slang_hooks.h"
#include "replayer/com_ptr.h"
#include "replayer/nvrtc_location.h"
#include "replayer/recorded_working_directory.h"
#include "slang.h"
#include "tests/cpp/hooked_slang.h"

namespace spreplay {
namespace {

using ::testing::Contains;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

// Tests

class GoldReplayTest : public ::testing::TestWithParam<int> {};

TEST_P(GoldReplayTest, ReplayedPtxIsByteIdenticalAfterTheSourcesAreGone) {
  const int debug_info = GetParam();
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  TempDir sources;
  sources.Write("user.slang", kUserModule);
  sources.Write("helper.slang", kHelperModule);
  std::vector<Recording> recordings = RecordCallSites(
      live.get(), {sources.path().string(), WheelSlangDirectory()}, {kWrapperBody}, debug_info);
  ASSERT_EQ(recordings.size(), 1u);
  const Recording& recording = recordings.front();
  ASSERT_TRUE(recording.program->keyable);
  ASSERT_THAT(recording.code, HasSubstr(".entry compute_main"));
  EXPECT_TRUE(recording.snapshot.files.contains((sources.path() / "helper.slang").string()));
  if (debug_info > 0) {
    // With debug information NVRTC writes source paths into the PTX: the
    // replay must reproduce the recorded paths, not only the contents.
    EXPECT_THAT(recording.code, HasSubstr((sources.path() / "user.slang").string()));
  }
  sources.Remove();

  std::unique_ptr<Replayer> replayer = NewReplayer();
  ASSERT_TRUE(replayer);
  absl::StatusOr<ReplayedKernel> replayed = Replay(*replayer, recording);
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_EQ(replayed->code, recording.code);
  EXPECT_FALSE(replayed->reused_session);
  EXPECT_GT(replayed->front_end_seconds, 0);
  EXPECT_GT(replayed->codegen_seconds, 0);
  fmt::print("debug info {}: front end + link {:.3f} s, codegen {:.3f} s, {} bytes of PTX\n",
             debug_info, replayed->front_end_seconds, replayed->codegen_seconds,
             replayed->code.size());
}

INSTANTIATE_TEST_SUITE_P(DebugInfo, GoldReplayTest, ::testing::Values(0, 2));

TEST(ReplayerTest, ReportsTheSlangBuildTag) {
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  EXPECT_EQ(SlangBuildTag(), live->getBuildTagString());
  EXPECT_FALSE(SlangBuildTag().empty());
}

TEST(ReplayerTest, ReusesTheSessionOfASharedConfig) {
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  TempDir sources;
  sources.Write("user.slang", kUserModule);
  sources.Write("helper.slang", kHelperModule);
  std::vector<Recording> recordings =
      RecordCallSites(live.get(), {sources.path().string(), WheelSlangDirectory()},
                      {kWrapperBody, kOtherWrapperBody});
  ASSERT_EQ(recordings.size(), 2u);
  ASSERT_NE(recordings[0].code, recordings[1].code);
  sources.Remove();

  std::unique_ptr<Replayer> replayer = NewReplayer();
  ASSERT_TRUE(replayer);
  absl::StatusOr<ReplayedKernel> first = Replay(*replayer, recordings[0]);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<ReplayedKernel> second = Replay(*replayer, recordings[1]);
  ASSERT_TRUE(second.ok()) << second.status();
  absl::StatusOr<ReplayedKernel> again = Replay(*replayer, recordings[0]);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(first->code, recordings[0].code);
  EXPECT_EQ(second->code, recordings[1].code);
  EXPECT_EQ(again->code, recordings[0].code);
  EXPECT_FALSE(first->reused_session);
  EXPECT_TRUE(second->reused_session);
  EXPECT_TRUE(again->reused_session);
  // The slangpy core module and the user's module were not parsed again.
  EXPECT_LT(second->front_end_seconds, first->front_end_seconds);
  fmt::print("front end: fresh session {:.3f} s, reused {:.3f} s and {:.3f} s\n",
             first->front_end_seconds, second->front_end_seconds, again->front_end_seconds);
}

TEST(ReplayerTest, AReusedSessionNeverServesStaleFiles) {
  // Two recordings of one configuration, between which the imported file changed.
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  TempDir sources;
  sources.Write("user.slang", kUserModule);
  sources.Write("helper.slang", kHelperModule);
  const std::vector<std::string> include_paths = {sources.path().string(), WheelSlangDirectory()};
  std::vector<Recording> before = RecordCallSites(live.get(), include_paths, {kWrapperBody});
  sources.Write("helper.slang",
                "public float helper_mul(float a, float b) { return a * b - 2.0f; }\n");
  std::vector<Recording> after = RecordCallSites(live.get(), include_paths, {kWrapperBody});
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(after.size(), 1u);
  ASSERT_NE(before[0].code, after[0].code);
  sources.Remove();

  std::unique_ptr<Replayer> replayer = NewReplayer();
  ASSERT_TRUE(replayer);
  for (const Recording* recording : {&before[0], &after[0], &before[0]}) {
    absl::StatusOr<ReplayedKernel> replayed = Replay(*replayer, *recording);
    ASSERT_TRUE(replayed.ok()) << replayed.status();
    EXPECT_EQ(replayed->code, recording->code);
    EXPECT_FALSE(replayed->reused_session);
  }
}

TEST(ReplayerTest, FollowsSymbolicLinksOfTheRecordingMachine) {
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  TempDir sources;
  sources.Write("real/user.slang", kUserModule);
  sources.Write("real/helper.slang", kHelperModule);
  std::filesystem::create_directory_symlink(sources.path() / "real", sources.path() / "link");
  // Debug information puts source paths into the PTX.
  std::vector<Recording> recordings = RecordCallSites(
      live.get(), {(sources.path() / "link").string(), WheelSlangDirectory()}, {kWrapperBody}, 2);
  ASSERT_EQ(recordings.size(), 1u);
  sources.Remove();

  std::unique_ptr<Replayer> replayer = NewReplayer();
  ASSERT_TRUE(replayer);
  absl::StatusOr<ReplayedKernel> replayed = Replay(*replayer, recordings[0]);
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_EQ(replayed->code, recordings[0].code);
}

class RecordedKernelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
    TempDir sources;
    sources.Write("user.slang", kUserModule);
    sources.Write("helper.slang", kHelperModule);
    std::vector<Recording> recordings = RecordCallSites(
        live.get(), {sources.path().string(), WheelSlangDirectory()}, {kWrapperBody});
    ASSERT_EQ(recordings.size(), 1u);
    recording_ = new Recording(std::move(recordings.front()));
    helper_path_ = new std::string((sources.path() / "helper.slang").string());
  }
  static void TearDownTestSuite() {
    delete recording_;
    delete helper_path_;
  }

  static Recording* recording_;
  static std::string* helper_path_;
};
Recording* RecordedKernelTest::recording_ = nullptr;
std::string* RecordedKernelTest::helper_path_ = nullptr;

TEST_F(RecordedKernelTest, AChangedImportedFileChangesTheModuleDigest) {
  const std::string changed = "public float helper_mul(float a, float b) { return a * b; }\n";
  ComponentPtr user = CompositeChild(*recording_, 1);
  ASSERT_EQ(user->name, "user.slang");
  std::vector<SourceFile> dependencies = user->dependencies;
  bool found = false;
  for (SourceFile& file : dependencies) {
    if (file.path != *helper_path_) continue;
    file.content = Sha256Of(changed);
    found = true;
  }
  ASSERT_TRUE(found);
  ComponentPtr rekeyed =
      Component::Module(user->name, user->path, user->requested_name, user->source, dependencies);
  EXPECT_NE(rekeyed->digest, user->digest);

  Recording altered = *recording_;
  altered.snapshot.AddFile(*helper_path_, changed);
  std::unique_ptr<Replayer> replayer = NewReplayer();
  ASSERT_TRUE(replayer);
  absl::StatusOr<ReplayedKernel> replayed = Replay(*replayer, altered);
  ASSERT_FALSE(replayed.ok());
  EXPECT_EQ(replayed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(replayed.status().message()), HasSubstr(*helper_path_));
  EXPECT_THAT(std::string(replayed.status().message()), HasSubstr("user.slang"));
}

TEST_F(RecordedKernelTest, AMissingFileIsNamed) {
  Recording incomplete = *recording_;
  ASSERT_EQ(incomplete.snapshot.files.erase(*helper_path_), 1u);
  std::unique_ptr<Replayer> replayer = NewReplayer();
  ASSERT_TRUE(replayer);
  absl::StatusOr<ReplayedKernel> replayed = Replay(*replayer, incomplete);
  ASSERT_FALSE(replayed.ok());
  EXPECT_EQ(replayed.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(replayed.status().message()), HasSubstr(*helper_path_));
}

TEST_F(RecordedKernelTest, RejectsPartsTheHooksCouldNotSee) {
  std::unique_ptr<Replayer> replayer = NewReplayer();
  ASSERT_TRUE(replayer);
  absl::StatusOr<ReplayedKernel> replayed = replayer->Replay(
      recording_->config, Component::Linked(Component::Opaque("made out of sight"), {}), 0, 0,
      recording_->snapshot);
  EXPECT_FALSE(replayed.ok());
  replayed = replayer->Replay(recording_->config, CompositeChild(*recording_, 0), 0, 0,
                              recording_->snapshot);
  EXPECT_EQ(replayed.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RecordedKernelTest, ReturnsSlangDiagnosticsOfAModuleThatFailsToCompile) {
  // A module on a path that never existed here, whose snapshot text is broken.
  const std::string path = "/spreplay-nonexistent/inc/broken.slang";
  const std::string text = "public float broken(float x) { return x +; }\n";
  ComponentPtr module = Component::Module("broken.slang", path, "broken.slang", std::nullopt,
                                          {{path, Sha256Of(text)}});
  ComponentPtr program = Component::Linked(
      Component::Composite({module, Component::EntryPoint(module, "compute_main", kFoundByName)}),
      {});
  SessionConfig config = recording_->config;
  CompilerOption include;
  include.name = static_cast<int32_t>(slang::CompilerOptionName::Include);
  include.kind = static_cast<int32_t>(slang::CompilerOptionValueKind::String);
  include.string0 = "/spreplay-nonexistent/inc";
  config.options.push_back(include);
  Snapshot snapshot;
  snapshot.AddFile(path, text);

  std::unique_ptr<Replayer> replayer = NewReplayer();
  ASSERT_TRUE(replayer);
  absl::StatusOr<ReplayedKernel> replayed = replayer->Replay(config, program, 0, 0, snapshot);
  ASSERT_FALSE(replayed.ok());
  EXPECT_EQ(replayed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(replayed.status().message()), HasSubstr("broken.slang"));
  EXPECT_THAT(std::string(replayed.status().message()), HasSubstr("error"));
  EXPECT_THAT(std::string(replayed.status().message()), HasSubstr(path));
}

// Dynamic dispatch: type conformances looked up by name, an entry point found
// for a stage and renamed.
constexpr const char* kOpsModule = R"(public interface IOp { float apply(float x); }
public struct Twice : IOp { public float apply(float x) { return 2.0f * x; } }
public struct Plus : IOp { public float apply(float x) { return x + 1.0f; } }
)";
constexpr const char* kDispatchWrapper = R"(// dispatch
import ops;
[shader("compute")]
[numthreads(32, 1, 1)]
void compute_main(uint3 tid: SV_DispatchThreadID, uniform RWStructuredBuffer<float> data,
                  uniform uint type_id) {
  IOp op = createDynamicObject<IOp, int>(type_id, 0);
  data[tid.x] = op.apply(data[tid.x]);
}
)";

// `twice_id` -1 asks Slang to pick the id, which makes the code depend on the
// session's history.
absl::StatusOr<std::string> CompileDispatch(slang::ISession* session, SlangInt twice_id) {
  ComPtr<ISlangBlob> diagnostics;
  slang::IModule* ops = session->loadModule("ops.slang", diagnostics.WriteRef());
  if (!ops) return absl::InternalError("ops: " + Diagnostics(diagnostics));
  slang::IModule* wrapper = session->loadModuleFromSourceString(
      "dispatch", nullptr, kDispatchWrapper, diagnostics.WriteRef());
  if (!wrapper) return absl::InternalError("wrapper: " + Diagnostics(diagnostics));
  ComPtr<slang::IEntryPoint> entry_point;
  if (SLANG_FAILED(wrapper->findAndCheckEntryPoint("compute_main", SLANG_STAGE_COMPUTE,
                                                   entry_point.WriteRef(), diagnostics.WriteRef())))
    return absl::InternalError("entry point: " + Diagnostics(diagnostics));
  ComPtr<slang::IComponentType> renamed;
  if (SLANG_FAILED(entry_point->renameEntryPoint("dispatch_main", renamed.WriteRef())))
    return absl::InternalError("rename");
  // Like sgl: a composite of the modules, only to look the types up in.
  slang::IComponentType* modules[] = {wrapper, ops};
  ComPtr<slang::IComponentType> lookup;
  if (SLANG_FAILED(session->createCompositeComponentType(modules, 2, lookup.WriteRef(),
                                                         diagnostics.WriteRef())))
    return absl::InternalError("lookup composite");
  slang::ProgramLayout* layout = lookup->getLayout();
  slang::TypeReflection* interface_type = layout->findTypeByName("IOp");
  ComPtr<slang::ITypeConformance> twice;
  ComPtr<slang::ITypeConformance> plus;
  if (SLANG_FAILED(session->createTypeConformanceComponentType(layout->findTypeByName("Twice"),
                                                               interface_type, twice.WriteRef(),
                                                               twice_id, diagnostics.WriteRef())) ||
      SLANG_FAILED(session->createTypeConformanceComponentType(layout->findTypeByName("Plus"),
                                                               interface_type, plus.WriteRef(), 7,
                                                               diagnostics.WriteRef()))) {
    return absl::InternalError("conformance: " + Diagnostics(diagnostics));
  }
  return ComposeAndGenerate(session, {wrapper, ops, twice.get(), plus.get(), renamed.get()});
}

// Records CompileDispatch in one live sgl-like session over `sources`, which
// holds ops.slang.
std::vector<Recording> RecordDispatch(slang::IGlobalSession* global_session, const TempDir& sources,
                                      int twice_id) {
  return RecordSession(global_session, {sources.path().string()}, 0, [&](slang::ISession* session) {
    return CompileDispatch(session, twice_id).status();
  });
}

TEST(ReplayerTest, ReplaysTypeConformancesAndRenamedEntryPoints) {
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  TempDir sources;
  sources.Write("ops.slang", kOpsModule);
  std::vector<Recording> recordings = RecordDispatch(live.get(), sources, 3);
  ASSERT_EQ(recordings.size(), 1u);
  ASSERT_TRUE(recordings[0].program->keyable);
  ASSERT_THAT(recordings[0].code, HasSubstr(".entry dispatch_main"));
  sources.Remove();

  std::unique_ptr<Replayer> replayer = NewReplayer();
  ASSERT_TRUE(replayer);
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::StatusOr<ReplayedKernel> replayed = Replay(*replayer, recordings[0]);
    ASSERT_TRUE(replayed.ok()) << replayed.status();
    EXPECT_EQ(replayed->code, recordings[0].code);
    // Witness table ids live in the session: never replay in a used one.
    EXPECT_FALSE(replayed->reused_session);
  }
}

TEST(ReplayerTest, AutomaticConformanceIdsAreKeyedByTheIdSlangAssigned) {
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  TempDir sources;
  sources.Write("ops.slang", kOpsModule);
  std::vector<Recording> recordings = RecordDispatch(live.get(), sources, -1);
  ASSERT_EQ(recordings.size(), 1u);
  ASSERT_TRUE(recordings[0].program->keyable);
  // The recording names the id Slang assigned, which the code depends on.
  std::vector<int64_t> ids;
  ForEachDistinctNode(recordings[0].program, [&](const Component& node) {
    if (node.kind == Component::Kind::kTypeConformance) ids.push_back(node.conformance_id);
  });
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_GE(std::min(ids[0], ids[1]), 0);
  sources.Remove();

  // Replayed with that id given explicitly, the code is the same.
  ExpectEachReplaysIdentically(recordings);
}

// A conformance of a type that a module outside the program declares: only
// the conformance brings that module's code into the kernel.
constexpr const char* kThriceModule = R"(import ops;
public struct Thrice : IOp { public float apply(float x) { return 3.0f * x; } }
)";
constexpr const char* kOtherThriceModule = R"(import ops;
public struct Thrice : IOp { public float apply(float x) { return 3.0f * x - 7.0f; } }
)";
constexpr const char* kAlteredThriceModule = R"(import ops;
public struct Thrice : IOp { public float apply(float x) { return 3.0f * x + 0.5f; } }
)";

absl::StatusOr<std::string> CompileDispatchOfADeclaredElsewhereType(slang::ISession* session) {
  ComPtr<ISlangBlob> diagnostics;
  slang::IModule* ops = session->loadModule("ops.slang", diagnostics.WriteRef());
  // Declares a type of the same name, which the conformance does not use.
  slang::IModule* other = session->loadModule("other.slang", diagnostics.WriteRef());
  slang::IModule* thrice = session->loadModule("thrice.slang", diagnostics.WriteRef());
  slang::IModule* wrapper = session->loadModuleFromSourceString(
      "dispatch", nullptr, kDispatchWrapper, diagnostics.WriteRef());
  if (!ops || !other || !thrice || !wrapper)
    return absl::InternalError("load: " + Diagnostics(diagnostics));
  ComPtr<slang::IEntryPoint> entry_point;
  if (SLANG_FAILED(wrapper->findAndCheckEntryPoint("compute_main", SLANG_STAGE_COMPUTE,
                                                   entry_point.WriteRef(), diagnostics.WriteRef())))
    return absl::InternalError("entry point: " + Diagnostics(diagnostics));
  slang::TypeReflection* interface_type = ops->getLayout()->findTypeByName("IOp");
  slang::TypeReflection* type = thrice->getLayout()->findTypeByName("Thrice");
  ComPtr<slang::ITypeConformance> conformance;
  if (!interface_type || !type ||
      SLANG_FAILED(session->createTypeConformanceComponentType(
          type, interface_type, conformance.WriteRef(), 0, diagnostics.WriteRef())))
    return absl::InternalError("conformance: " + Diagnostics(diagnostics));
  return ComposeAndGenerate(session, {wrapper, ops, conformance.get(), entry_point.get()});
}

TEST(ReplayerTest, ATypeConformanceIsKeyedWithTheModuleDeclaringItsType) {
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  auto record = [&](const char* thrice_text) {
    TempDir sources;
    sources.Write("ops.slang", kOpsModule);
    sources.Write("thrice.slang", thrice_text);
    sources.Write("other.slang", kOtherThriceModule);
    std::vector<Recording> recordings =
        RecordSession(live.get(), {sources.path().string()}, 0, [](slang::ISession* session) {
          return CompileDispatchOfADeclaredElsewhereType(session).status();
        });
    EXPECT_EQ(recordings.size(), 1u);
    return recordings.empty() ? Recording{} : recordings.front();
  };
  const Recording original = record(kThriceModule);
  const Recording altered = record(kAlteredThriceModule);
  ASSERT_TRUE(original.program && altered.program);
  ASSERT_TRUE(original.program->keyable && altered.program->keyable);
  // Slang linked Thrice's code in, though nothing else in the program names
  // thrice.slang: the key must change with it.
  ASSERT_NE(original.code, altered.code);
  EXPECT_NE(original.program->digest, altered.program->digest);
  std::vector<std::string> declaring_paths;
  ForEachDistinctNode(original.program, [&](const Component& node) {
    if (node.kind != Component::Kind::kTypeConformance) return;
    for (const SourceFile& file : node.dependencies) declaring_paths.push_back(file.path);
  });
  EXPECT_THAT(declaring_paths, Contains(EndsWith("/thrice.slang")));
  EXPECT_THAT(declaring_paths, Not(Contains(EndsWith("/other.slang"))));
}

// Like slangpy's `session.compose_modules(modules=[module from source],
// type_conformances=[...])`: the type is declared by a module loaded from a
// string, which has no file.
constexpr const char* kConformingFromSource = R"(// compose_conformance
interface IValue { uint getValue(); };
struct ValueA : IValue { uint dummy; uint getValue() { return 10; } };
struct ValueB : IValue { uint dummy; uint getValue() { return 20; } };
[shader("compute")]
[numthreads(1, 1, 1)]
void main_conformance(uint3 tid: SV_DispatchThreadID, RWStructuredBuffer<uint> result) {
  uint type_id = 0;
  uint dummy = 0;
  IValue value = createDynamicObject<IValue>(type_id, dummy);
  result[tid.x] = value.getValue();
}
)";

absl::StatusOr<std::string> CompileComposedConformance(slang::ISession* session,
                                                       const char* type_name) {
  ComPtr<ISlangBlob> diagnostics;
  slang::IModule* module = session->loadModuleFromSourceString(
      "compose_conformance", nullptr, kConformingFromSource, diagnostics.WriteRef());
  if (!module) return absl::InternalError("load: " + Diagnostics(diagnostics));
  slang::IComponentType* modules[] = {module};
  ComPtr<slang::IComponentType> lookup;
  if (SLANG_FAILED(session->createCompositeComponentType(modules, 1, lookup.WriteRef(),
                                                         diagnostics.WriteRef())))
    return absl::InternalError("lookup composite");
  slang::ProgramLayout* layout = lookup->getLayout();
  ComPtr<slang::ITypeConformance> conformance;
  if (SLANG_FAILED(session->createTypeConformanceComponentType(
          layout->findTypeByName(type_name), layout->findTypeByName("IValue"),
          conformance.WriteRef(), 0, diagnostics.WriteRef())))
    return absl::InternalError("conformance: " + Diagnostics(diagnostics));
  slang::IComponentType* parts[] = {module, conformance.get()};
  ComPtr<slang::IComponentType> composed;
  if (SLANG_FAILED(session->createCompositeComponentType(parts, 2, composed.WriteRef(),
                                                         diagnostics.WriteRef())))
    return absl::InternalError("compose");
  ComPtr<slang::IEntryPoint> entry_point;
  if (SLANG_FAILED(module->findEntryPointByName("main_conformance", entry_point.WriteRef())))
    return absl::InternalError("entry point");
  return ComposeAndGenerate(session, {composed.get(), entry_point.get()});
}

TEST(ReplayerTest, ReplaysAConformanceOfATypeDeclaredByAModuleFromSource) {
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  std::vector<Recording> recordings =
      RecordSession(live.get(), {}, 0, [](slang::ISession* session) -> absl::Status {
        for (const char* type_name : {"ValueA", "ValueB"}) {
          if (absl::StatusOr<std::string> code = CompileComposedConformance(session, type_name);
              !code.ok())
            return code.status();
        }
        return absl::OkStatus();
      });
  ASSERT_EQ(recordings.size(), 2u);
  for (const Recording& recording : recordings) ASSERT_TRUE(recording.program->keyable);
  EXPECT_NE(recordings[0].program->digest, recordings[1].program->digest);
  // The conformance is keyed with the module from source that declares
  // ValueA, though sgl looked the type up in a composite of that module
  // alone, which Slang answers with the module itself.
  std::vector<std::string> declaring_paths;
  ForEachDistinctNode(recordings[0].program, [&](const Component& node) {
    if (node.kind != Component::Kind::kTypeConformance) return;
    for (const SourceFile& file : node.dependencies) declaring_paths.push_back(file.path);
  });
  EXPECT_EQ(declaring_paths.size(), 1u);
  ExpectEachReplaysIdentically(recordings);
}

// Runs the rest of a test in `directory`, and goes back where it was after.

TEST(ReplayerTest, ReplaysABareNameModuleOfTheAppsDirectoryFromAnywhere) {
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  TempDir app;
  app.Write("user.slang", kUserModule);
  app.Write("helper.slang", kHelperModule);
  std::vector<Recording> recordings;
  {
    // Like `Module.load_from_file(device, "user.slang")` run from the app's
    // folder, with debug information: NVRTC names the wrapper's source by
    // the working directory.
    ScopedChdir in_app(app.path());
    recordings = RecordCallSites(live.get(), {WheelSlangDirectory()}, {kWrapperBody}, 2);
  }
  ASSERT_EQ(recordings.size(), 1u);
  const Recording& recording = recordings.front();
  ASSERT_EQ(CompositeChild(recording, 1)->path, "user.slang");
  EXPECT_EQ(recording.config.working_directory, app.path().string());
  EXPECT_THAT(recording.code, HasSubstr(app.path().string()));
  app.Remove();

  TempDir elsewhere;
  ScopedChdir in_elsewhere(elsewhere.path());
  std::unique_ptr<Replayer> replayer = NewReplayer();
  ASSERT_TRUE(replayer);
  absl::StatusOr<ReplayedKernel> replayed = Replay(*replayer, recording);
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_EQ(replayed->code, recording.code);
  // The compiling process's own directory is untouched.
  EXPECT_EQ(std::filesystem::current_path(), elsewhere.path());
}

constexpr const char* kUserImportingSlangpy = R"(import slangpy;
import helper;
public float scale(float x) { return helper_mul(x, 3.0f); }
)";

// A call site as slangpy makes one: its Slang library, the user's module and
// the wrapper. Which of the first two loads first decides the name Slang
// gives slangpy's library: "slangpy.slang" when loaded by that name,
// "slangpy" when the user's `import slangpy;` loaded it.
absl::StatusOr<std::string> CompileWithSlangpyLoaded(slang::ISession* session, bool slangpy_first,
                                                     std::string& slangpy_name) {
  ComPtr<ISlangBlob> diagnostics;
  slang::IModule* slangpy = nullptr;
  if (slangpy_first) slangpy = session->loadModule("slangpy.slang", diagnostics.WriteRef());
  slang::IModule* user = session->loadModule("user.slang", diagnostics.WriteRef());
  if (!slangpy_first) slangpy = session->loadModule("slangpy.slang", diagnostics.WriteRef());
  if (!slangpy || !user) return absl::InternalError("load: " + Diagnostics(diagnostics));
  slangpy_name = slangpy->getName();
  const std::string name(64, 'a');
  const std::string source = fmt::format("// {}\n{}", name, kWrapperBody);
  slang::IModule* wrapper = session->loadModuleFromSourceString(
      name.c_str(), nullptr, source.c_str(), diagnostics.WriteRef());
  if (!wrapper) return absl::InternalError("wrapper: " + Diagnostics(diagnostics));
  ComPtr<slang::IEntryPoint> entry_point;
  if (SLANG_FAILED(wrapper->findEntryPointByName("compute_main", entry_point.WriteRef())))
    return absl::InternalError("no compute_main");
  return ComposeAndGenerate(session, {wrapper, slangpy, user, entry_point.get()});
}

TEST(ReplayerTest, KeysDoNotDependOnTheNameLoadOrderGaveAModule) {
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  TempDir sources;
  sources.Write("user.slang", kUserImportingSlangpy);
  sources.Write("helper.slang", kHelperModule);
  std::vector<Recording> recordings;
  std::vector<std::string> names;
  for (bool slangpy_first : {true, false}) {
    std::string name;
    std::vector<Recording> recorded =
        RecordSession(live.get(), {sources.path().string(), WheelSlangDirectory()}, 2,
                      [&](slang::ISession* session) {
                        return CompileWithSlangpyLoaded(session, slangpy_first, name).status();
                      });
    ASSERT_EQ(recorded.size(), 1u);
    recordings.push_back(std::move(recorded.front()));
    names.push_back(name);
  }
  ASSERT_EQ(names, (std::vector<std::string>{"slangpy.slang", "slangpy"}));
  // The same files make the same code whatever the module was called...
  ASSERT_EQ(recordings[0].code, recordings[1].code);
  // ...and so the same key.
  EXPECT_EQ(recordings[0].program->digest, recordings[1].program->digest);
  EXPECT_EQ(CompositeChild(recordings[0], 1)->digest, CompositeChild(recordings[1], 1)->digest);
  sources.Remove();

  // Each still replays with the name it had.
  ExpectEachReplaysIdentically(recordings);
}

constexpr const char* kGenericModule = R"(interface IProcessor { float process(float x); }
struct DoubleIt : IProcessor { float process(float x) { return x * 2.0; } }
struct SquareIt : IProcessor { float process(float x) { return x * x; } }
[shader("compute")]
[numthreads(64, 1, 1)]
void compute_main<T : IProcessor>(uint3 tid: SV_DispatchThreadID,
                                  uniform RWStructuredBuffer<float> data) {
  T processor;
  data[tid.x] = processor.process(data[tid.x]);
}
)";

// What sgl's `module.entry_point("compute_main").specialize([...])` and
// `device.link_program` do.
absl::StatusOr<std::string> CompileSpecialized(slang::ISession* session, const char* type_name) {
  ComPtr<ISlangBlob> diagnostics;
  slang::IModule* module = session->loadModule("generic.slang", diagnostics.WriteRef());
  if (!module) return absl::InternalError("load: " + Diagnostics(diagnostics));
  ComPtr<slang::IEntryPoint> entry_point;
  if (SLANG_FAILED(module->findEntryPointByName("compute_main", entry_point.WriteRef())))
    return absl::InternalError("no compute_main");
  slang::TypeReflection* type = module->getLayout()->findTypeByName(type_name);
  if (!type) return absl::InternalError("no type");
  const slang::SpecializationArg argument = slang::SpecializationArg::fromType(type);
  ComPtr<slang::IComponentType> specialized;
  if (SLANG_FAILED(
          entry_point->specialize(&argument, 1, specialized.WriteRef(), diagnostics.WriteRef())))
    return absl::InternalError("specialize: " + Diagnostics(diagnostics));
  return ComposeAndGenerate(session, {module, specialized.get()});
}

TEST(ReplayerTest, ReplaysGenericEntryPointsSpecialisedByType) {
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  TempDir sources;
  sources.Write("generic.slang", kGenericModule);
  std::vector<Recording> recordings =
      RecordSession(live.get(), {sources.path().string()}, 0, [](slang::ISession* session) {
        for (const char* type : {"DoubleIt", "SquareIt"}) {
          if (absl::StatusOr<std::string> code = CompileSpecialized(session, type); !code.ok())
            return code.status();
        }
        return absl::OkStatus();
      });
  ASSERT_EQ(recordings.size(), 2u);
  ASSERT_TRUE(recordings[0].program->keyable);
  EXPECT_NE(recordings[0].program->digest, recordings[1].program->digest);
  EXPECT_NE(recordings[0].code, recordings[1].code);
  sources.Remove();

  ExpectEachReplaysIdentically(recordings);
}

}  // namespace
}  // namespace spreplay
