// Slang modules served from verified IR, against real Slang, no GPU: the
// compiler serializes what the app loaded and proves the IR rebuilds every
// kernel byte for byte; the hooks then load modules and wrappers from the
// archive instead of running Slang's front end, under the same kernel keys,
// and fall back to source whenever a file differs.

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/compile_pipeline.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interpose/module_cache.h"
#include "recorder/trace_reader.h"
#include "recorder/trace_recorder.h"
#include "replayer/ir_modules.h"
#include "runtime/archive_modules.h"
#include "tests/cpp/hooked_slang.h"
#include "tests/cpp/record_and_compile.h"

namespace spreplay {
namespace {

using ::testing::HasSubstr;

constexpr const char* kSecondWrapper = R"(import slangpy;
import user;
[shader("compute")]
[numthreads(32, 1, 1)]
void compute_main(uint3 tid: SV_DispatchThreadID, uniform RWStructuredBuffer<float> data) {
  data[tid.x] = scale(scale(data[tid.x]));
}
)";

// `front`, when given, is searched before `sources`.
std::vector<Recording> RecordTwoCallSites(const TempDir& sources, int debug_info = 0,
                                          const TempDir* front = nullptr) {
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  std::vector<std::string> include_paths = {WheelSlangDirectory()};
  if (front) include_paths.push_back(front->path().string());
  include_paths.push_back(sources.path().string());
  return RecordCallSites(live.get(), include_paths, {kWrapperBody, kSecondWrapper}, debug_info);
}

std::vector<RecordedProgram> ProgramsOf(const std::vector<Recording>& recordings) {
  std::vector<RecordedProgram> programs;
  for (const Recording& recording : recordings)
    programs.push_back({recording.program, &recording.snapshot, recording.entry_point_index,
                        recording.target_index});
  return programs;
}

// What compile's modules stage does with a session's recordings: serialize
// its modules, then rebuild every program over them in a fresh session.
struct IrRebuild {
  SerializedSession serialized;
  std::vector<absl::StatusOr<std::string>> codes;
};

IrRebuild RebuildOverIr(const std::vector<Recording>& recordings) {
  EXPECT_TRUE(TakeOverWorkingDirectoryForNvrtc());
  ReplayerOptions options;
  options.nvrtc_directory = NvrtcDirectory();
  absl::StatusOr<std::unique_ptr<IrModuleBuilder>> builder = IrModuleBuilder::Create(options);
  EXPECT_TRUE(builder.ok()) << builder.status();
  if (!builder.ok()) return {};
  const std::vector<RecordedProgram> programs = ProgramsOf(recordings);
  IrRebuild rebuilt;
  rebuilt.serialized = (*builder)->Serialize(recordings[0].config, programs);
  rebuilt.codes = (*builder)->RebuildFromIr(recordings[0].config, programs, rebuilt.serialized);
  return rebuilt;
}

TEST(IrModulesTest, RebuildEveryProgramByteIdenticallyFromIr) {
  TempDir sources;
  sources.Write("user.slang", kUserModule);
  sources.Write("helper.slang", kHelperModule);
  const std::vector<Recording> recordings = RecordTwoCallSites(sources);
  ASSERT_EQ(recordings.size(), 2u);
  sources.Remove();  // the snapshot holds everything

  const IrRebuild rebuilt = RebuildOverIr(recordings);
  const SerializedSession& serialized = rebuilt.serialized;

  std::vector<std::string> names;
  for (const SerializedModule& module : serialized.modules) {
    names.push_back(module.description->name);
    EXPECT_FALSE(module.ir.empty()) << module.description->name;
  }
  // slangpy's library, the user's module, the helper it imports (which the
  // app never asked for by name) and both wrappers.
  EXPECT_THAT(names, ::testing::IsSupersetOf({"slangpy", "user.slang", "helper"}));
  ASSERT_EQ(serialized.modules.size(), 5u);
  for (const SerializedModule& module : serialized.modules) {
    if (module.description->name != "user.slang") continue;
    ASSERT_EQ(module.imports.size(), 1u);
    EXPECT_EQ(serialized.modules[module.imports[0]].description->name, "helper");
  }
  ASSERT_EQ(serialized.uses.size(), 2u);
  for (const auto& uses : serialized.uses) {
    ASSERT_TRUE(uses.ok()) << uses.status();
    EXPECT_EQ(uses->size(), 4u);  // slangpy, helper, user and its own wrapper
  }

  const std::vector<absl::StatusOr<std::string>>& codes = rebuilt.codes;
  ASSERT_EQ(codes.size(), 2u);
  for (size_t i = 0; i < codes.size(); ++i) {
    ASSERT_TRUE(codes[i].ok()) << codes[i].status();
    EXPECT_EQ(*codes[i], recordings[i].code);
  }
}

TEST(IrModulesTest, ModulesOfASessionWithDebugInformationCarryTheirSourceLocations) {
  // With debug information the line table comes from every instruction's
  // source location, which IModule::serialize leaves out: the modules are
  // serialized with them, and the PTX is byte-identical, line table included.
  TempDir sources;
  sources.Write("user.slang", kUserModule);
  sources.Write("helper.slang", kHelperModule);
  const std::vector<Recording> recordings = RecordTwoCallSites(sources, /*debug_info=*/2);
  ASSERT_EQ(recordings.size(), 2u);
  const std::vector<absl::StatusOr<std::string>> codes = RebuildOverIr(recordings).codes;
  ASSERT_EQ(codes.size(), 2u);
  for (size_t i = 0; i < codes.size(); ++i) {
    ASSERT_TRUE(codes[i].ok()) << codes[i].status();
    EXPECT_THAT(*codes[i], HasSubstr(".loc")) << "no line table: the test proves nothing";
    EXPECT_EQ(*codes[i], recordings[i].code);
  }
}

// A part of a configuration serialized in a session that already holds the
// modules every program of the configuration loads (WarmSession) describes
// and uses the same modules as one serialized from nothing, and its IR
// rebuilds each kernel byte for byte; with debug information too.
class WarmSessionTest : public ::testing::TestWithParam<int> {};

TEST_P(WarmSessionTest, APartSerializedFromAWarmSessionIsAsOneFromNothing) {
  TempDir sources;
  sources.Write("user.slang", kUserModule);
  sources.Write("helper.slang", kHelperModule);
  const std::vector<Recording> recordings = RecordTwoCallSites(sources, GetParam());
  ASSERT_EQ(recordings.size(), 2u);
  ASSERT_TRUE(TakeOverWorkingDirectoryForNvrtc());
  ReplayerOptions options;
  options.nvrtc_directory = NvrtcDirectory();
  absl::StatusOr<std::unique_ptr<IrModuleBuilder>> builder = IrModuleBuilder::Create(options);
  ASSERT_TRUE(builder.ok()) << builder.status();
  const SessionConfig& config = recordings[0].config;
  const std::vector<RecordedProgram> both = ProgramsOf(recordings);

  absl::StatusOr<std::unique_ptr<WarmSession>> warm = (*builder)->Warm(config, both);
  ASSERT_TRUE(warm.ok()) << warm.status();
  std::set<std::string> warmed;
  for (const auto& [module, ir] : (*warm)->modules) {
    EXPECT_TRUE(ir.ok()) << ir.status();
    warmed.insert(module->getName());
  }
  // The user's module, which both programs hold, with the helper it
  // imports. (slangpy's library is no node of these programs, as it is of
  // slangpy's, which compose it: the wrappers' import loads it.)
  EXPECT_THAT(warmed, ::testing::IsSupersetOf({"user.slang", "helper"}));

  // The second call site alone, as a part of its own.
  const std::vector<RecordedProgram> second = {both[1]};
  const SerializedSession from_warm = (*builder)->Serialize(config, second, warm->get());
  const SerializedSession from_nothing = (*builder)->Serialize(config, second);
  ASSERT_EQ(from_warm.modules.size(), from_nothing.modules.size());
  for (size_t i = 0; i < from_warm.modules.size(); ++i) {
    const Component& a = *from_warm.modules[i].description;
    const Component& b = *from_nothing.modules[i].description;
    EXPECT_EQ(std::tie(a.name, a.requested_name, a.path, a.digest),
              std::tie(b.name, b.requested_name, b.path, b.digest));
    EXPECT_EQ(from_warm.modules[i].imports, from_nothing.modules[i].imports);
    EXPECT_FALSE(from_warm.modules[i].ir.empty()) << a.name;
  }
  ASSERT_TRUE(from_warm.uses[0].ok()) << from_warm.uses[0].status();
  EXPECT_EQ(*from_warm.uses[0], *from_nothing.uses[0]);
  EXPECT_EQ(from_warm.layouts, from_nothing.layouts);
  const std::vector<absl::StatusOr<std::string>> codes =
      (*builder)->RebuildFromIr(config, second, from_warm);
  ASSERT_EQ(codes.size(), 1u);
  ASSERT_TRUE(codes[0].ok()) << codes[0].status();
  EXPECT_EQ(*codes[0], recordings[1].code);
}

INSTANTIATE_TEST_SUITE_P(DebugInformation, WarmSessionTest, ::testing::Values(0, 2));

// ---------------------------------------------------------------------------------------------
// Record → compile → serve, in this process

class ServedModulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Switch();
    EXPECT_TRUE(TakeOverWorkingDirectoryForNvrtc());
    sources_.Write("user.slang", kUserModule);
    sources_.Write("helper.slang", kHelperModule);
    absl::StatusOr<Compiled> compiled =
        RecordAndCompile(work_.path(), [&] { return RecordTwoCallSites(sources_, 0, &front_); });
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    recordings_ = std::move(compiled->recordings);
    ASSERT_EQ(recordings_.size(), 2u);
    ASSERT_EQ(compiled->report.failed(), 0u);
    EXPECT_EQ(compiled->report.modules_archived, 5u);
    EXPECT_EQ(compiled->report.modules_refused, 0u);
    archive_ = std::move(compiled->archive);
  }

  struct Run {
    HookCounts before, after;
    std::vector<Recording> kernels;
    std::vector<MissRecord> misses;
    uint64_t served() const { return after.modules_served - before.modules_served; }
    uint64_t compiled() const { return after.modules_compiled - before.modules_compiled; }
  };

  // The two call sites again, in a new process-like global session, with
  // modules served from the archive.
  Run ServeFrom(const TempDir& front, const TempDir& sources) {
    ArchiveModules modules(*archive_, /*strict=*/false);
    Switch().Use(&modules);
    Run run;
    run.before = GetHookCounts();
    run.kernels = RecordTwoCallSites(sources, 0, &front);
    run.after = GetHookCounts();
    Switch().Use(nullptr);
    run.misses = modules.misses();
    return run;
  }

  TempDir work_;
  TempDir front_;  // an empty search path ahead of the sources
  TempDir sources_;
  std::vector<Recording> recordings_;
  std::unique_ptr<Archive> archive_;
};

TEST_F(ServedModulesTest, ServesEveryModuleUnderTheRecordedKernelKeys) {
  const Run run = ServeFrom(front_, sources_);
  EXPECT_EQ(run.served(), 5u);
  EXPECT_EQ(run.compiled(), 0u);
  EXPECT_THAT(run.misses, ::testing::IsEmpty());
  ASSERT_EQ(run.kernels.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(run.kernels[i].program->digest, recordings_[i].program->digest);
    EXPECT_EQ(run.kernels[i].code, recordings_[i].code);
  }
}

TEST_F(ServedModulesTest, AMovedAppIsServedInFull) {
  TempDir moved;
  TempDir moved_front;
  std::filesystem::copy(sources_.path(), moved.path(), std::filesystem::copy_options::recursive);
  sources_.Remove();
  front_.Remove();
  const Run run = ServeFrom(moved_front, moved);
  EXPECT_EQ(run.served(), 5u);
  EXPECT_EQ(run.compiled(), 0u);
  ASSERT_EQ(run.kernels.size(), 2u);
  EXPECT_EQ(run.kernels[0].program->digest, recordings_[0].program->digest);
}

TEST_F(ServedModulesTest, ANewCallSiteOfAMovedAppCompilesOverServedModulesAndIsKeyed) {
  TempDir moved;
  TempDir moved_front;
  std::filesystem::copy(sources_.path(), moved.path(), std::filesystem::copy_options::recursive);
  sources_.Remove();
  ArchiveModules modules(*archive_, /*strict=*/false);
  Switch().Use(&modules);
  const HookCounts before = GetHookCounts();
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  // A call site the recording never saw: its wrapper loads from source and
  // imports the user's module, served from IR from its new place.
  std::vector<Recording> kernels = RecordCallSites(
      live.get(), {WheelSlangDirectory(), moved_front.path().string(), moved.path().string()},
      {kOtherWrapperBody});
  const HookCounts after = GetHookCounts();
  Switch().Use(nullptr);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(after.modules_served - before.modules_served, 3u);      // helper, user, then slangpy
  EXPECT_EQ(after.modules_compiled - before.modules_compiled, 1u);  // the new wrapper
  EXPECT_TRUE(kernels[0].program->keyable) << NotKeyableReason(kernels[0].program);
}

TEST_F(ServedModulesTest, AnEditedImportLoadsFromSourceAndSaysWhichFile) {
  sources_.Write("helper.slang",
                 "public float helper_mul(float a, float b) { return a * b + 2.0f; }\n");
  const Run run = ServeFrom(front_, sources_);
  EXPECT_EQ(run.served(), 1u);  // slangpy's library, which no edit touched
  EXPECT_GE(run.compiled(), 3u);
  ASSERT_FALSE(run.misses.empty());
  EXPECT_THAT(run.misses[0].reason, HasSubstr("helper.slang changed"));
  ASSERT_EQ(run.kernels.size(), 2u);
  EXPECT_NE(run.kernels[0].program->digest, recordings_[0].program->digest);
  EXPECT_NE(run.kernels[0].code, recordings_[0].code);
  // Modules loaded from source over served ones are still described by
  // content: their kernels are keyed, and could be served by a rebuilt archive.
  EXPECT_TRUE(run.kernels[0].program->keyable) << NotKeyableReason(run.kernels[0].program);
}

TEST_F(ServedModulesTest, AFileThatWouldNowBeFoundFirstIsNoticed) {
  // Slang would now load this user.slang, found in an earlier search path.
  front_.Write("user.slang", "import helper;\npublic float scale(float x) { return x; }\n");
  const Run run = ServeFrom(front_, sources_);
  ASSERT_FALSE(run.misses.empty());
  EXPECT_THAT(run.misses[0].reason, HasSubstr("would now be found at"));
  ASSERT_EQ(run.kernels.size(), 2u);
  EXPECT_NE(run.kernels[0].code, recordings_[0].code);
}

TEST_F(ServedModulesTest, StrictModeRefusesAModuleThatWouldLoadFromSource) {
  sources_.Write("helper.slang",
                 "public float helper_mul(float a, float b) { return a * b + 2.0f; }\n");
  ArchiveModules modules(*archive_, /*strict=*/true);
  Switch().Use(&modules);
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  SglCudaSessionDesc desc(
      live.get(), {WheelSlangDirectory(), front_.path().string(), sources_.path().string()}, 0);
  ComPtr<slang::ISession> session;
  ASSERT_EQ(live->createSession(desc.desc(), session.WriteRef()), SLANG_OK);
  ComPtr<ISlangBlob> diagnostics;
  slang::IModule* user = session->loadModule("user.slang", diagnostics.WriteRef());
  Switch().Use(nullptr);
  EXPECT_EQ(user, nullptr);
  EXPECT_THAT(BlobToString(diagnostics.get()), HasSubstr("SLANGPY_KERNELS_STRICT_MODULES"));
  EXPECT_THAT(BlobToString(diagnostics.get()), HasSubstr("helper.slang changed"));
}

TEST_F(ServedModulesTest, DamagedIrCostsItsModuleButNeitherTheOthersNorAnyKernelKey) {
  // One byte flipped inside slangpy's library IR, in a copy of the archive.
  const auto modules_of = archive_->index().getModules();
  size_t slangpy = modules_of.size();
  for (size_t i = 0; i < modules_of.size(); ++i) {
    if (std::string_view(modules_of[static_cast<unsigned>(i)].getName().cStr()) == "slangpy")
      slangpy = i;
  }
  ASSERT_LT(slangpy, modules_of.size());
  absl::StatusOr<std::span<const std::byte>> ir = archive_->ModuleIr(slangpy);
  ASSERT_TRUE(ir.ok()) << ir.status();
  std::string bytes;
  {
    std::ifstream in(work_.path() / "kernels.sprk", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string_view middle(reinterpret_cast<const char*>(ir->data()) + ir->size() / 2, 64);
  const size_t at = bytes.find(middle);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 7] ^= 0x20;
  std::vector<std::byte> damaged_bytes(bytes.size());
  std::memcpy(damaged_bytes.data(), bytes.data(), bytes.size());
  absl::StatusOr<Archive> damaged = Archive::Open(damaged_bytes, "damaged.sprk");
  ASSERT_TRUE(damaged.ok()) << damaged.status();

  ArchiveModules modules(*damaged, /*strict=*/false);
  Switch().Use(&modules);
  const HookCounts before = GetHookCounts();
  const std::vector<Recording> kernels = RecordTwoCallSites(sources_, 0, &front_);
  const HookCounts after = GetHookCounts();
  Switch().Use(nullptr);
  ASSERT_EQ(kernels.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(kernels[i].program->digest, recordings_[i].program->digest) << i;
    EXPECT_EQ(kernels[i].code, recordings_[i].code) << i;
  }
  // The user's module and its helper do not import slangpy's library.
  EXPECT_GE(after.modules_served - before.modules_served, 2u);
  std::vector<std::string> reasons;
  for (const MissRecord& miss : modules.misses()) reasons.push_back(miss.reason);
  EXPECT_THAT(reasons, ::testing::Contains(HasSubstr("fails its checksum")));
}

TEST(ServedHotReloadTest, BothVersionsOfAReloadedFileAreArchivedAndServed) {
  Switch();
  TempDir work;
  TempDir front;
  TempDir sources;
  sources.Write("user.slang", kUserModule);
  sources.Write("helper.slang", kHelperModule);
  constexpr const char* kEditedHelper =
      "public float helper_mul(float a, float b) { return a * b + 2.0f; }\n";
  // Like a hot reload: the same call sites in a new session of the same
  // configuration, after an edit, into the same trace.
  std::vector<Recording> edited;
  absl::StatusOr<Compiled> compiled = RecordAndCompile(work.path(), [&] {
    std::vector<Recording> first = RecordTwoCallSites(sources, 0, &front);
    sources.Write("helper.slang", kEditedHelper);
    edited = RecordTwoCallSites(sources, 0, &front);
    first.insert(first.end(), edited.begin(), edited.end());
    return first;
  });
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_EQ(compiled->recordings.size(), 4u);
  EXPECT_EQ(compiled->report.failed(), 0u);
  // helper, user and both wrappers in two versions; slangpy's library once.
  EXPECT_EQ(compiled->report.modules_archived, 9u);
  EXPECT_EQ(compiled->report.modules_refused, 0u);

  for (const char* helper : {kHelperModule, kEditedHelper}) {
    sources.Write("helper.slang", helper);
    ArchiveModules modules(*compiled->archive, /*strict=*/true);
    Switch().Use(&modules);
    const HookCounts before = GetHookCounts();
    std::vector<Recording> served = RecordTwoCallSites(sources, 0, &front);
    const HookCounts after = GetHookCounts();
    Switch().Use(nullptr);
    EXPECT_EQ(after.modules_served - before.modules_served, 5u);
    EXPECT_EQ(after.modules_compiled - before.modules_compiled, 0u);
    EXPECT_THAT(modules.misses(), ::testing::IsEmpty());
    const std::vector<Recording>& expected =
        helper == kHelperModule
            ? std::vector<Recording>(compiled->recordings.begin(), compiled->recordings.begin() + 2)
            : edited;
    ASSERT_EQ(served.size(), 2u);
    for (size_t i = 0; i < 2; ++i) EXPECT_EQ(served[i].code, expected[i].code);
  }
}

TEST_F(ServedModulesTest, ASessionWithAModuleCacheIsServed) {
  TempDir cache;
  ArchiveModules modules(*archive_, /*strict=*/false);
  Switch().Use(&modules);
  const HookCounts before = GetHookCounts();
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  const std::vector<std::string> include_paths = {WheelSlangDirectory(), front_.path().string(),
                                                  sources_.path().string()};
  // sgl's layout: <module_cache_path>/<session uid>/<include path number>.
  std::vector<std::string> cache_directories;
  for (size_t i = 0; i < include_paths.size(); ++i) {
    cache_directories.push_back((cache.path() / std::string(40, 'c') / std::to_string(i)).string());
    std::filesystem::create_directories(cache_directories.back());
  }
  SglCudaSessionDesc desc(live.get(), include_paths, 0, cache_directories);
  Hooks().Start();
  ComPtr<slang::ISession> session;
  ASSERT_EQ(live->createSession(desc.desc(), session.WriteRef()), SLANG_OK);
  absl::StatusOr<std::string> code = CompileCallSite(
      session.get(), "user.slang", fmt::format("call_site_{:040x}", 1), kWrapperBody);
  std::vector<Recording> kernels = Hooks().Stop();
  const HookCounts after = GetHookCounts();
  Switch().Use(nullptr);
  ASSERT_TRUE(code.ok()) << code.status();
  for (const MissRecord& miss : modules.misses())
    ADD_FAILURE() << miss.call_site << ": " << miss.reason;
  EXPECT_EQ(after.modules_served - before.modules_served, 4u);
  EXPECT_EQ(after.modules_compiled - before.modules_compiled, 0u);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].program->digest, recordings_[0].program->digest);
  EXPECT_EQ(*code, recordings_[0].code);
  // The cache is empty: a served module keeps its source's path, as after a
  // load from source, and sgl writes its entry (below).
  std::vector<std::string> user_paths;
  for (SlangInt i = 0; i < session->getLoadedModuleCount(); ++i) {
    slang::IModule* module = session->getLoadedModule(i);
    if (std::string_view(module->getName()) == "user.slang")
      user_paths.push_back(module->getFilePath() ? module->getFilePath() : "");
  }
  EXPECT_THAT(user_paths, ::testing::ElementsAre((sources_.path() / "user.slang").string()));
}

// sgl's module cache around one session: <cache>/<uid>/<include path number>
// ahead of the include paths, and its writer (SlangSession::
// write_module_to_cache): every module the session holds whose path is below
// an include path and not a cache entry's, serialized into its entry.
class SglModuleCache {
 public:
  SglModuleCache(const std::filesystem::path& root, std::vector<std::string> include_paths)
      : include_paths_(std::move(include_paths)) {
    for (size_t i = 0; i < include_paths_.size(); ++i) {
      directories_.push_back((root / std::string(40, 'c') / std::to_string(i)).string());
      std::filesystem::create_directories(directories_.back());
    }
  }

  const std::vector<std::string>& include_paths() const { return include_paths_; }
  const std::vector<std::string>& directories() const { return directories_; }

  // Writes the entries of the modules `session` loaded since the last call
  // (those not in `seen`), as sgl does after each load and link; the entries
  // written, by path, are added to `written`.
  void WriteNew(slang::ISession* session, std::set<slang::IModule*>& seen,
                std::map<std::string, std::string>& written) const {
    namespace fs = std::filesystem;
    for (SlangInt i = 0; i < session->getLoadedModuleCount(); ++i) {
      slang::IModule* module = session->getLoadedModule(i);
      if (!seen.insert(module).second || !module->getFilePath()) continue;
      const fs::path path = module->getFilePath();
      if (path.extension() == ".slang-module") continue;
      for (size_t j = 0; j < include_paths_.size(); ++j) {
        const std::string relative = fs::relative(path, include_paths_[j]).string();
        if (relative.empty() || relative.starts_with("..")) continue;
        fs::path entry = fs::path(directories_[j]) / relative;
        entry.replace_extension(".slang-module");
        ComPtr<ISlangBlob> blob;
        EXPECT_EQ(module->serialize(blob.WriteRef()), SLANG_OK);
        const std::string bytes = BlobToString(blob.get());
        fs::create_directories(entry.parent_path());
        std::ofstream(entry, std::ios::binary) << bytes;
        written[entry.string()] = bytes;
        break;
      }
    }
  }
  std::map<std::string, std::string> WriteAfter(slang::ISession* session) const {
    std::set<slang::IModule*> seen;
    std::map<std::string, std::string> written;
    WriteNew(session, seen, written);
    return written;
  }

  // The modules `session` holds, by name, with the paths Slang gives them.
  static std::map<std::string, std::string> PathsIn(slang::ISession* session) {
    std::map<std::string, std::string> paths;
    for (SlangInt i = 0; i < session->getLoadedModuleCount(); ++i) {
      slang::IModule* module = session->getLoadedModule(i);
      if (module->getFilePath()) paths[module->getName()] = module->getFilePath();
    }
    return paths;
  }

 private:
  std::vector<std::string> include_paths_;
  std::vector<std::string> directories_;
};

TEST_F(ServedModulesTest, AServedSessionWritesTheModuleCacheStockSlangLoads) {
  const std::vector<std::string> include_paths = {WheelSlangDirectory(), front_.path().string(),
                                                  sources_.path().string()};
  const std::string wrapper = fmt::format("call_site_{:040x}", 1);
  struct Session {
    std::string code;
    std::map<std::string, std::string> paths, written;
    uint64_t served = 0, compiled = 0;
  };
  // One process: a global session, one session with `cache`, one call site,
  // then sgl's cache writer; modules served from the archive if `serve`.
  auto run = [&](const SglModuleCache& cache, bool serve) {
    ArchiveModules modules(*archive_, /*strict=*/false);
    Switch().Use(serve ? &modules : nullptr);
    const HookCounts before = GetHookCounts();
    ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
    SglCudaSessionDesc desc(live.get(), cache.include_paths(), 0, cache.directories());
    ComPtr<slang::ISession> session;
    EXPECT_EQ(live->createSession(desc.desc(), session.WriteRef()), SLANG_OK);
    Session result;
    // A call site as sgl makes it, writing the cache after each load and the
    // link (SlangSession::update_module_cache_and_dependencies).
    std::set<slang::IModule*> seen;
    ComPtr<ISlangBlob> diagnostics;
    slang::IModule* user = session->loadModule("user.slang", diagnostics.WriteRef());
    EXPECT_NE(user, nullptr) << Diagnostics(diagnostics);
    cache.WriteNew(session.get(), seen, result.written);
    const std::string source = fmt::format("// {}\n{}", wrapper, kWrapperBody);
    slang::IModule* loaded_wrapper = session->loadModuleFromSourceString(
        wrapper.c_str(), nullptr, source.c_str(), diagnostics.WriteRef());
    EXPECT_NE(loaded_wrapper, nullptr) << Diagnostics(diagnostics);
    cache.WriteNew(session.get(), seen, result.written);
    if (user && loaded_wrapper) {
      ComPtr<slang::IEntryPoint> entry_point;
      EXPECT_EQ(loaded_wrapper->findEntryPointByName("compute_main", entry_point.WriteRef()),
                SLANG_OK);
      SlangpyLinkOptions link_options(wrapper);
      absl::StatusOr<std::string> code =
          ComposeAndGenerate(session.get(), {loaded_wrapper, user, entry_point.get()},
                             link_options.data(), link_options.count());
      EXPECT_TRUE(code.ok()) << code.status();
      result.code = code.value_or("");
    }
    cache.WriteNew(session.get(), seen, result.written);
    result.paths = SglModuleCache::PathsIn(session.get());
    const HookCounts after = GetHookCounts();
    Switch().Use(nullptr);
    result.served = after.modules_served - before.modules_served;
    result.compiled = after.modules_compiled - before.modules_compiled;
    return result;
  };
  auto names = [](const std::map<std::string, std::string>& entries) {
    std::vector<std::string> found;
    for (const auto& [path, bytes] : entries)
      found.push_back(std::filesystem::path(path).filename().string());
    return found;
  };

  // Stock slangpy, for reference: the first process writes the cache, the
  // second loads every module from it.
  TempDir stock_root;
  const SglModuleCache stock_cache(stock_root.path(), include_paths);
  const Session stock_cold = run(stock_cache, /*serve=*/false);
  const Session stock_warm = run(stock_cache, /*serve=*/false);
  EXPECT_THAT(names(stock_cold.written),
              ::testing::IsSupersetOf({"user.slang-module", "helper.slang-module"}));
  EXPECT_THAT(stock_warm.written, ::testing::IsEmpty());

  // Served with an empty cache: every module from the archive, and the
  // cache written as stock slangpy writes it.
  TempDir root;
  const SglModuleCache cache(root.path(), include_paths);
  const Session served_cold = run(cache, /*serve=*/true);
  EXPECT_EQ(served_cold.served, 4u);
  EXPECT_EQ(served_cold.compiled, 0u);
  EXPECT_EQ(served_cold.code, recordings_[0].code);
  EXPECT_THAT(names(served_cold.written), ::testing::ElementsAreArray(names(stock_cold.written)));
  for (const auto& [path, bytes] : served_cold.written) {
    const std::string stock_path = stock_root.path() / std::filesystem::relative(path, root.path());
    auto stock = stock_cold.written.find(stock_path);
    ASSERT_NE(stock, stock_cold.written.end()) << path;
    // Byte for byte what stock slangpy wrote, but for the digest, which
    // covers the cache directories' own paths, and a few bytes of the AST
    // that Slang does not write deterministically: they differ between two
    // stock processes too (3 bytes of slangpy.slang-module's 13 MB, measured).
    ASSERT_EQ(bytes.size(), stock->second.size()) << path;
    const std::optional<std::string> ours = AsModuleLibraryWithoutDigest(bytes);
    const std::optional<std::string> theirs = AsModuleLibraryWithoutDigest(stock->second);
    ASSERT_TRUE(ours && theirs) << path;
    size_t differing = 0;
    for (size_t i = 0; i < ours->size(); ++i) differing += (*ours)[i] != (*theirs)[i];
    EXPECT_LE(differing, 8u) << path << " differs from what stock slangpy wrote";
    EXPECT_FALSE(bytes == stock->second) << path;  // the digests differ
  }

  // Stock slangpy after it: Slang loads every cached module from its entry
  // (its path says so), none from source, and compiles what it compiles
  // from its own cache.
  const Session stock_after = run(cache, /*serve=*/false);
  for (const auto& [path, bytes] : served_cold.written) {
    bool loaded_from_entry = false;
    for (const auto& [name, loaded] : stock_after.paths) loaded_from_entry |= loaded == path;
    EXPECT_TRUE(loaded_from_entry) << path << " was not loaded from the cache";
  }
  EXPECT_THAT(stock_after.written, ::testing::IsEmpty());
  EXPECT_EQ(stock_after.code, stock_warm.code);

  // Served again: each module served under its entry's path, as Slang names
  // a module it loaded from the cache, so sgl writes nothing.
  const Session served_warm = run(cache, /*serve=*/true);
  EXPECT_EQ(served_warm.served, 4u);
  EXPECT_EQ(served_warm.compiled, 0u);
  EXPECT_EQ(served_warm.code, recordings_[0].code);
  EXPECT_THAT(served_warm.written, ::testing::IsEmpty());
  std::string stock_entry = stock_warm.paths.at("user.slang");
  stock_entry.replace(0, stock_root.path().string().size(), root.path().string());
  EXPECT_EQ(served_warm.paths.at("user.slang"), stock_entry);
}

// A module the archive does not serve loads from source in a session created
// without the cache; its entry is still the one stock Slang would load.
TEST_F(ServedModulesTest, AModuleLoadedFromSourceInAServedSessionIsCachedForStockSlang) {
  TempDir root;
  const SglModuleCache cache(
      root.path(), {WheelSlangDirectory(), front_.path().string(), sources_.path().string()});
  sources_.Write("other.slang",
                 "import helper;\npublic float other(float x) { return helper_mul(x, 2.0f); }\n");
  ArchiveModules modules(*archive_, /*strict=*/false);
  Switch().Use(&modules);
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  SglCudaSessionDesc desc(live.get(), cache.include_paths(), 0, cache.directories());
  ComPtr<slang::ISession> session;
  ASSERT_EQ(live->createSession(desc.desc(), session.WriteRef()), SLANG_OK);
  ComPtr<ISlangBlob> diagnostics;
  ASSERT_NE(session->loadModule("other", diagnostics.WriteRef()), nullptr)
      << Diagnostics(diagnostics);
  const std::map<std::string, std::string> written = cache.WriteAfter(session.get());
  Switch().Use(nullptr);
  const std::string entry =
      (std::filesystem::path(cache.directories()[2]) / "other.slang-module").string();
  ASSERT_TRUE(written.contains(entry));

  ComPtr<slang::ISession> stock;
  ASSERT_EQ(live->createSession(desc.desc(), stock.WriteRef()), SLANG_OK);
  ASSERT_NE(stock->loadModule("other", diagnostics.WriteRef()), nullptr)
      << Diagnostics(diagnostics);
  EXPECT_EQ(SglModuleCache::PathsIn(stock.get()).at("other"), entry);
}

// A call site of a module loaded by absolute path, as slangpy makes one:
// Slang names the module by its path, and slangpy's wrapper imports it by
// that name, under a name derived from the wrapper's text.
absl::Status CompileModuleLoadedByPath(slang::ISession* session,
                                       const std::filesystem::path& user) {
  ComPtr<ISlangBlob> diagnostics;
  slang::IModule* module = session->loadModule(user.c_str(), diagnostics.WriteRef());
  if (!module) return absl::InternalError("loadModule: " + Diagnostics(diagnostics));
  const std::string body = fmt::format(R"(import slangpy;
import "{}";
[shader("compute")]
[numthreads(32, 1, 1)]
void compute_main(uint3 tid: SV_DispatchThreadID, uniform RWStructuredBuffer<float> data) {{
  data[tid.x] = scale(data[tid.x]);
}}
)",
                                       module->getName());
  const std::string name = Sha256Of(body).ToHex();
  absl::StatusOr<std::string> code = CompileCallSite(session, user.string(), name, body);
  return code.ok() ? absl::OkStatus() : code.status();
}

TEST(ServedModulesByPathTest, AModuleLoadedByAbsolutePathIsServedFromItsNewPlace) {
  Switch();
  EXPECT_TRUE(TakeOverWorkingDirectoryForNvrtc());
  TempDir work;
  TempDir sources;
  sources.Write("user.slang", kUserModule);
  sources.Write("helper.slang", kHelperModule);
  absl::StatusOr<Compiled> compiled = RecordAndCompile(work.path(), [&] {
    ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
    return RecordSession(live.get(), {WheelSlangDirectory(), sources.path().string()}, 0,
                         [&](slang::ISession* session) {
                           return CompileModuleLoadedByPath(session, sources.path() / "user.slang");
                         });
  });
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const std::vector<Recording>& recorded = compiled->recordings;
  ASSERT_EQ(recorded.size(), 1u);
  ASSERT_EQ(compiled->report.modules_archived, 4u);  // slangpy, helper, user, wrapper
  const Archive& archive = *compiled->archive;

  TempDir moved;
  std::filesystem::copy(sources.path(), moved.path(), std::filesystem::copy_options::recursive);
  sources.Remove();
  ArchiveModules modules(archive, /*strict=*/false);
  Switch().Use(&modules);
  const HookCounts before = GetHookCounts();
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  std::vector<Recording> served = RecordSession(
      live.get(), {WheelSlangDirectory(), moved.path().string()}, 0, [&](slang::ISession* session) {
        return CompileModuleLoadedByPath(session, moved.path() / "user.slang");
      });
  const HookCounts after = GetHookCounts();
  Switch().Use(nullptr);
  EXPECT_THAT(modules.misses(), ::testing::IsEmpty());
  EXPECT_EQ(after.modules_served - before.modules_served, 4u);
  EXPECT_EQ(after.modules_compiled - before.modules_compiled, 0u);
  ASSERT_EQ(served.size(), 1u);
  // The same program, so the same kernel key: the archived kernel is served.
  EXPECT_EQ(served[0].program->digest, recorded[0].program->digest);
}

// ---------------------------------------------------------------------------------------------
// Dynamic dispatch over served modules

// slangpy's test of type conformances: a module from a string, whose function
// creates a dynamic object of an interface its two structs conform to.
constexpr const char* kConformingModule = R"(import "slangpy";
interface IVal { int get(); }
struct Get10 : IVal { int get() { return 10; } }
struct Get20 : IVal { int get() { return 20; } }
int getval() { IVal val = createDynamicObject<IVal>(0, 0); return val.get(); }
)";

// A call site of getval per conformance, each its own kernel, the ids left to
// Slang as slangpy leaves them. slangpy names each wrapper after a hash of
// the call, conformances included: the wrappers' texts differ only in those
// names.
absl::Status CompileDispatchCallSites(slang::ISession* session,
                                      const std::vector<std::string>& conformances) {
  ComPtr<ISlangBlob> diagnostics;
  slang::IModule* user = session->loadModuleFromSourceString(
      "a5f179b4bedeb3e8", nullptr, kConformingModule, diagnostics.WriteRef());
  if (!user) return absl::InternalError("user module: " + Diagnostics(diagnostics));
  const std::string body = R"(import slangpy;
import a5f179b4bedeb3e8;
[shader("compute")]
[numthreads(1, 1, 1)]
void compute_main(uint3 tid: SV_DispatchThreadID, uniform RWStructuredBuffer<int> data) {
  data[tid.x] = getval();
}
)";
  slang::ProgramLayout* layout = user->getLayout();
  for (const std::string& conforming : conformances) {
    const std::string name = Sha256Of(body + conforming).ToHex();
    slang::IModule* wrapper = session->loadModuleFromSourceString(
        name.c_str(), nullptr, fmt::format("// {}\n{}", name, body).c_str(),
        diagnostics.WriteRef());
    if (!wrapper) return absl::InternalError("wrapper: " + Diagnostics(diagnostics));
    ComPtr<slang::IEntryPoint> entry_point;
    if (SLANG_FAILED(wrapper->findEntryPointByName("compute_main", entry_point.WriteRef())))
      return absl::InternalError("no compute_main");
    ComPtr<slang::ITypeConformance> conformance;
    if (SLANG_FAILED(session->createTypeConformanceComponentType(
            layout->findTypeByName(conforming.c_str()), layout->findTypeByName("IVal"),
            conformance.WriteRef(), -1, diagnostics.WriteRef())))
      return absl::InternalError("conformance: " + Diagnostics(diagnostics));
    absl::StatusOr<std::string> code =
        ComposeAndGenerate(session, {wrapper, user, entry_point.get(), conformance.get()});
    if (!code.ok()) return code.status();
  }
  return absl::OkStatus();
}

TEST(ServedModulesDispatchTest, KernelsWithAutomaticConformanceIdsKeepTheirKeys) {
  Switch();
  EXPECT_TRUE(TakeOverWorkingDirectoryForNvrtc());
  TempDir work;
  const std::vector<std::string> conformances = {"Get10", "Get20"};
  auto record = [&] {
    ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
    return RecordSession(live.get(), {WheelSlangDirectory()}, 2, [&](slang::ISession* session) {
      return CompileDispatchCallSites(session, conformances);
    });
  };
  absl::StatusOr<Compiled> compiled = RecordAndCompile(work.path(), record);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_EQ(compiled->recordings.size(), 2u);
  EXPECT_EQ(compiled->report.failed(), 0u);
  EXPECT_EQ(compiled->report.modules_refused, 0u);
  // The wrappers' descriptions, and so their digests, are the same: their
  // texts differ in the derived names alone. The trace holds the second as a
  // variant of the first, and each is archived under its own name.
  EXPECT_EQ(compiled->report.modules_archived, 4u);  // slangpy, the user's module, 2 wrappers

  ArchiveModules modules(*compiled->archive, /*strict=*/false);
  Switch().Use(&modules);
  const HookCounts before = GetHookCounts();
  const std::vector<Recording> served = record();
  const HookCounts after = GetHookCounts();
  Switch().Use(nullptr);
  EXPECT_EQ(after.modules_served - before.modules_served, 4u);
  EXPECT_EQ(after.modules_compiled - before.modules_compiled, 0u);
  for (const MissRecord& miss : modules.misses())
    ADD_FAILURE() << miss.call_site << ": " << miss.reason;
  ASSERT_EQ(served.size(), 2u);
  for (size_t i = 0; i < served.size(); ++i) {
    EXPECT_EQ(served[i].program->digest, compiled->recordings[i].program->digest) << i;
    EXPECT_EQ(served[i].code, compiled->recordings[i].code) << i;
  }
}

}  // namespace
}  // namespace spreplay
