// Modules an app loads but builds no kernel with (sgl's load_module, or
// load_program without a pipeline; slangpy's tests that dispatch nothing):
// the trace records which session asked for them, compile proves their IR
// by their layout and their entry points' code, and they are served like
// the modules of kernels. Real Slang, hooks installed, no GPU.

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "compiler/serialized_session_codec.h"
#include "compiler/trace_snapshot.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "recorder/trace_reader.h"
#include "replayer/ir_modules.h"
#include "runtime/archive_modules.h"
#include "tests/cpp/hooked_slang.h"
#include "tests/cpp/record_and_compile.h"

namespace spreplay {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr const char* kStringModuleName = "loaded_from_a_string";
constexpr const char* kStringModule = R"(public struct Pair { float a; float b; }
public float sum(Pair pair) { return pair.a + pair.b; }
)";

slang::IModule* LoadModule(slang::ISession* session, const char* name, std::string& why) {
  ComPtr<ISlangBlob> diagnostics;
  slang::IModule* module = session->loadModule(name, diagnostics.WriteRef());
  if (!module) why = Diagnostics(diagnostics);
  return module;
}

// The modules the app loads without a kernel: program.slang, by name, and a
// module from a string.
absl::Status LoadUnusedModules(slang::ISession* session) {
  std::string why;
  if (!LoadModule(session, "program.slang", why))
    return absl::InternalError("program.slang: " + why);
  ComPtr<ISlangBlob> diagnostics;
  if (!session->loadModuleFromSourceString(kStringModuleName, nullptr, kStringModule,
                                           diagnostics.WriteRef()))
    return absl::InternalError("string module: " + Diagnostics(diagnostics));
  return absl::OkStatus();
}

// program.slang's entry point, linked alone with it (sgl's load_program).
absl::StatusOr<std::string> ProgramCode(slang::ISession* session) {
  std::string why;
  slang::IModule* module = LoadModule(session, "program.slang", why);
  if (!module) return absl::InternalError(why);
  ComPtr<slang::IEntryPoint> entry_point;
  if (SLANG_FAILED(module->findEntryPointByName("main", entry_point.WriteRef())))
    return absl::InternalError("no main");
  return ComposeAndGenerate(session, {module, entry_point.get()});
}

class UnusedModulesTest : public ::testing::Test {
 protected:
  static constexpr int kNoKernelDebugInfo = 2;  // another configuration

  void SetUp() override {
    Switch();
    EXPECT_TRUE(TakeOverWorkingDirectoryForNvrtc());
    sources_.Write("user.slang", kUserModule);
    sources_.Write("helper.slang", kHelperModule);
    sources_.Write("program.slang", kProgramModule);
    absl::StatusOr<Compiled> compiled = RecordAndCompile(work_.path(), [&] {
      ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
      std::vector<Recording> recordings =
          RecordSession(live.get(), include_paths(), 0, [&](slang::ISession* session) {
            absl::StatusOr<std::string> code = CompileCallSite(
                session, "user.slang", fmt::format("call_site_{:040x}", 1), kWrapperBody);
            if (!code.ok()) return code.status();
            return LoadUnusedModules(session);
          });
      // A configuration of which the app built no kernel at all.
      RecordSession(live.get(), include_paths(), kNoKernelDebugInfo, LoadUnusedModules);
      return recordings;
    });
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    ASSERT_EQ(compiled->recordings.size(), 1u);
    ASSERT_EQ(compiled->report.failed(), 0u);
    compiled_ = std::move(compiled).value();
  }

  std::vector<std::string> include_paths() const {
    return {WheelSlangDirectory(), sources_.path().string()};
  }

  // How the archive holds the modules of each session configuration, as
  // "name by kernels|layout".
  std::vector<std::vector<std::string>> Archived() const {
    std::map<std::string, std::vector<std::string>> by_session;
    for (auto module : compiled_.archive->index().getModules()) {
      const std::string session(reinterpret_cast<const char*>(module.getSessionDigest().begin()),
                                module.getSessionDigest().size());
      by_session[session].push_back(fmt::format(
          "{} by {}", module.getName().cStr(),
          module.getVerifiedBy() == schema::ModuleVerification::LAYOUT ? "layout" : "kernels"));
    }
    std::vector<std::vector<std::string>> archived;
    for (auto& [session, modules] : by_session) archived.push_back(std::move(modules));
    return archived;
  }

  struct Served {
    std::vector<MissRecord> misses;
    uint64_t served = 0;
    uint64_t compiled = 0;
    absl::Status status;
    std::string code;  // program.slang's entry point's
  };

  // The unused modules loaded again in a new process-like global session,
  // served from the archive, then program.slang's entry point's code.
  Served Serve(bool strict, int debug_info = 0) {
    ArchiveModules modules(*compiled_.archive, strict);
    Switch().Use(&modules);
    const HookCounts before = GetHookCounts();
    ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
    SglCudaSessionDesc desc(live.get(), include_paths(), debug_info);
    ComPtr<slang::ISession> session;
    EXPECT_EQ(live->createSession(desc.desc(), session.WriteRef()), SLANG_OK);
    Served served;
    served.status = LoadUnusedModules(session.get());
    const HookCounts after = GetHookCounts();
    if (served.status.ok()) {
      absl::StatusOr<std::string> code = ProgramCode(session.get());
      EXPECT_TRUE(code.ok()) << code.status();
      served.code = code.value_or("");
    }
    Switch().Use(nullptr);
    served.misses = modules.misses();
    served.served = after.modules_served - before.modules_served;
    served.compiled = after.modules_compiled - before.modules_compiled;
    return served;
  }

  // program.slang's entry point's code, every module from source.
  std::string FromSource(int debug_info = 0) {
    ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
    SglCudaSessionDesc desc(live.get(), include_paths(), debug_info);
    ComPtr<slang::ISession> session;
    EXPECT_EQ(live->createSession(desc.desc(), session.WriteRef()), SLANG_OK);
    absl::StatusOr<std::string> code = ProgramCode(session.get());
    EXPECT_TRUE(code.ok()) << code.status();
    return code.value_or("");
  }

  TempDir work_, sources_;
  Compiled compiled_;
};

TEST_F(UnusedModulesTest, AreArchivedVerifiedByTheirLayout) {
  using ::testing::UnorderedElementsAre;
  EXPECT_EQ(compiled_.report.modules_refused, 0u);
  EXPECT_THAT(Archived(),
              UnorderedElementsAre(
                  UnorderedElementsAre(
                      "slangpy by kernels", "helper by kernels", "user.slang by kernels",
                      fmt::format("call_site_{:040x} by kernels", 1), "program.slang by layout",
                      fmt::format("{} by layout", kStringModuleName)),
                  // Of the configuration that built no kernel, program.slang's import
                  // too is verified by program.slang's layout.
                  UnorderedElementsAre("helper by layout", "program.slang by layout",
                                       fmt::format("{} by layout", kStringModuleName))));
}

// Every load the app asked for carries what it took; the report weighs the
// compile against the loads of the configuration that built its kernel, not
// those of the configuration that built none.
TEST_F(UnusedModulesTest, TheReportCountsTheAppsModuleLoadsOfTheSessionsOfItsKernels) {
  absl::StatusOr<Trace> trace = Trace::Read((work_.path() / "trace.capnp").string());
  ASSERT_TRUE(trace.ok()) << trace.status();
  absl::flat_hash_set<Digest> sessions_of_kernels;
  for (const KernelRecord& kernel : trace->kernels())
    sessions_of_kernels.insert(kernel.session_location);
  double of_kernels = 0;
  double of_no_kernel = 0;
  for (const ModuleLoadRecord& load : trace->module_loads()) {
    EXPECT_GT(load.load_seconds, 0) << load.name;
    (sessions_of_kernels.contains(load.session_location) ? of_kernels : of_no_kernel) +=
        load.load_seconds;
  }
  EXPECT_GT(of_no_kernel, 0);
  EXPECT_GT(of_kernels, 0);
  EXPECT_DOUBLE_EQ(compiled_.report.app_module_load_seconds, of_kernels);
}

// What compile proves of program.slang in the session that built a kernel:
// its entry point's code from IR is its code from source.
TEST_F(UnusedModulesTest, AModuleIsProvenByTheCodeOfItsEntryPoints) {
  absl::StatusOr<Trace> trace = Trace::Read((work_.path() / "trace.capnp").string());
  ASSERT_TRUE(trace.ok()) << trace.status();
  std::vector<std::string> loaded;
  const ModuleLoadRecord* program = nullptr;
  for (const ModuleLoadRecord& load : trace->module_loads()) {
    loaded.push_back(load.name);
    if (load.name == "program.slang" && !program) program = &load;
  }
  // Each session's requests, once; the wrapper's and user.slang's too.
  EXPECT_EQ(loaded.size(), 6u) << ::testing::PrintToString(loaded);
  ASSERT_NE(program, nullptr);
  absl::StatusOr<ComponentPtr> module = trace->ModuleOf(*program);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<Snapshot> snapshot = SnapshotFor(*trace, *module);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  absl::StatusOr<SessionConfig> config = trace->FindSession(program->session_location);
  ASSERT_TRUE(config.ok()) << config.status();

  ReplayerOptions options;
  options.nvrtc_directory = NvrtcDirectory();
  absl::StatusOr<std::unique_ptr<IrModuleBuilder>> builder = IrModuleBuilder::Create(options);
  ASSERT_TRUE(builder.ok()) << builder.status();
  const std::vector<RecordedProgram> programs = {{*module, &*snapshot, 0, 0}};
  const SerializedSession serialized = (*builder)->Serialize(*config, programs);
  ASSERT_EQ(serialized.uses.size(), 1u);
  ASSERT_TRUE(serialized.uses[0].ok()) << serialized.uses[0].status();
  ASSERT_EQ(serialized.entry_point_codes[0].size(), 1u);
  EXPECT_THAT(serialized.entry_point_codes[0][0], HasSubstr(".entry"));
  const std::vector<absl::StatusOr<std::string>> rebuilt =
      (*builder)->RebuildFromIr(*config, programs, serialized);
  ASSERT_EQ(rebuilt.size(), 1u);
  EXPECT_TRUE(rebuilt[0].ok()) << rebuilt[0].status();

  // As a worker process that did not serialize it gets it: the same proof.
  absl::StatusOr<SerializedSession> sent =
      DecodeSerializedSession(EncodeSerializedSession(serialized));
  ASSERT_TRUE(sent.ok()) << sent.status();
  ASSERT_EQ(sent->modules.size(), serialized.modules.size());
  for (size_t i = 0; i < sent->modules.size(); ++i) {
    EXPECT_EQ(sent->modules[i].ir, serialized.modules[i].ir);
    EXPECT_EQ(sent->modules[i].description->digest, serialized.modules[i].description->digest);
  }
  const std::vector<absl::StatusOr<std::string>> rebuilt_from_sent =
      (*builder)->RebuildFromIr(*config, programs, *sent);
  ASSERT_EQ(rebuilt_from_sent.size(), 1u);
  EXPECT_TRUE(rebuilt_from_sent[0].ok()) << rebuilt_from_sent[0].status();
}

TEST_F(UnusedModulesTest, AreServedInStrictMode) {
  const Served served = Serve(/*strict=*/true);
  ASSERT_TRUE(served.status.ok()) << served.status;
  EXPECT_THAT(Reasons(served.misses), IsEmpty());
  EXPECT_EQ(served.served, 3u);  // helper, program.slang, the string module
  EXPECT_EQ(served.compiled, 0u);
  EXPECT_EQ(served.code, FromSource());
}

TEST_F(UnusedModulesTest, AreServedInAConfigurationThatBuiltNoKernel) {
  const Served served = Serve(/*strict=*/true, kNoKernelDebugInfo);
  ASSERT_TRUE(served.status.ok()) << served.status;
  EXPECT_THAT(Reasons(served.misses), IsEmpty());
  EXPECT_EQ(served.served, 3u);
  EXPECT_EQ(served.compiled, 0u);
  EXPECT_EQ(served.code, FromSource(kNoKernelDebugInfo));
}

TEST_F(UnusedModulesTest, AnEditedModuleLoadsFromSourceAndSaysWhichFile) {
  sources_.Write("program.slang", std::string(kProgramModule) + "// edited\n");
  const Served served = Serve(/*strict=*/false);
  ASSERT_TRUE(served.status.ok()) << served.status;
  const std::vector<std::string> reasons = Reasons(served.misses);
  ASSERT_FALSE(reasons.empty());
  EXPECT_THAT(reasons[0], HasSubstr("program.slang changed"));
  EXPECT_EQ(served.compiled, 1u);  // program.slang; its helper and the string module are served
  EXPECT_EQ(served.served, 2u);
}

}  // namespace
}  // namespace spreplay

namespace spreplay {
namespace {

// As slangpy's test_reflection.py: a module from a string that declares a
// user attribute and uses it; reading its arguments' reflection from a
// module loaded from IR crashes in Slang, so it is never archived.
constexpr const char* kAttributeModule = R"(
[__AttributeUsage(_AttributeTargets.Function)]
struct OutputSpecAttribute { string format; int flags; };
public interface ITestWrite {
  [OutputSpec("rgba16_float", 7)]
  public static void color(uint2 coord, float4 value) { }
}
)";

TEST(UserAttributeModuleTest, IsLeftToTheSourceWithItsReasonAndReflectsAsStock) {
  Switch();
  EXPECT_TRUE(TakeOverWorkingDirectoryForNvrtc());
  TempDir work, sources;
  sources.Write("user.slang", kUserModule);
  sources.Write("helper.slang", kHelperModule);
  const std::vector<std::string> include_paths = {WheelSlangDirectory(), sources.path().string()};
  auto run = [&](slang::ISession* session) -> absl::Status {
    absl::StatusOr<std::string> code =
        CompileCallSite(session, "user.slang", fmt::format("call_site_{:040x}", 1), kWrapperBody);
    if (!code.ok()) return code.status();
    ComPtr<ISlangBlob> diagnostics;
    slang::IModule* module = session->loadModuleFromSourceString(
        "module_with_attributes", nullptr, kAttributeModule, diagnostics.WriteRef());
    if (!module) return absl::InternalError(Diagnostics(diagnostics));
    slang::ProgramLayout* layout = module->getLayout();
    slang::TypeReflection* interface_type = layout ? layout->findTypeByName("ITestWrite") : nullptr;
    slang::FunctionReflection* color =
        interface_type ? layout->findFunctionByNameInType(interface_type, "color") : nullptr;
    slang::UserAttribute* attribute = color ? color->getUserAttributeByIndex(0) : nullptr;
    if (!attribute || !attribute->getArgumentType(0))
      return absl::InternalError("no reflection of the attribute's arguments");
    return absl::OkStatus();
  };
  absl::StatusOr<Compiled> compiled = RecordAndCompile(work.path(), [&] {
    ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
    return RecordSession(live.get(), include_paths, 0, run);
  });
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const std::vector<std::string> unserved = UnservedModules(*compiled->archive);
  EXPECT_THAT(unserved, ::testing::Contains(::testing::AllOf(::testing::StartsWith(
                            "module_with_attributes: its text declares a user "
                            "attribute"))));

  ArchiveModules modules(*compiled->archive, /*strict=*/false);
  Switch().Use(&modules);
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  const std::vector<Recording> served = RecordSession(live.get(), include_paths, 0, run);
  Switch().Use(nullptr);
  ASSERT_EQ(served.size(), 1u);
  EXPECT_EQ(served[0].code, compiled->recordings[0].code);
}

}  // namespace
}  // namespace spreplay

namespace spreplay {
namespace {

// An app's module that no kernel was built with, importing a module its
// kernels were built with, with each program in a Slang session of its own
// (--programs-per-session 1): that session loads the import under the name
// the module asks for, not the one the app's kernels had loaded it by, so
// the archive may hold other modules than one session's would; but every
// module it holds is archived with every module it imports, whichever
// session decided them.
TEST(ProgramsPerSessionTest, EveryArchivedModuleIsArchivedWithItsImports) {
  Switch();
  EXPECT_TRUE(TakeOverWorkingDirectoryForNvrtc());
  TempDir work, sources;
  sources.Write("user.slang", kUserModule);
  sources.Write("helper.slang", kHelperModule);
  sources.Write("tool.slang",
                "import user;\npublic float twice(float x) { return scale(x) * 2.0f; }\n");
  const std::vector<std::string> include_paths = {WheelSlangDirectory(), sources.path().string()};
  absl::StatusOr<Compiled> compiled = RecordAndCompile(work.path(), [&] {
    ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
    return RecordSession(live.get(), include_paths, 0, [&](slang::ISession* session) {
      absl::StatusOr<std::string> code =
          CompileCallSite(session, "user.slang", fmt::format("call_site_{:040x}", 1), kWrapperBody);
      if (!code.ok()) return code.status();
      std::string why;
      if (!LoadModule(session, "tool.slang", why)) return absl::InternalError(why);
      return absl::OkStatus();
    });
  });
  ASSERT_TRUE(compiled.ok()) << compiled.status();

  absl::StatusOr<Trace> trace = Trace::Read((work.path() / "trace.capnp").string());
  ASSERT_TRUE(trace.ok()) << trace.status();
  CompileOptions options;
  options.arches = {90};
  options.jobs = 2;
  options.programs_per_session = 1;
  const std::string split_path = (work.path() / "one-program-per-session.sprk").string();
  absl::StatusOr<CompileReport> split = CompileTrace(*trace, split_path, options);
  ASSERT_TRUE(split.ok()) << split.status();
  absl::StatusOr<Archive> split_archive = Archive::Open(split_path);
  ASSERT_TRUE(split_archive.ok()) << split_archive.status();

  for (const Archive* archive : {compiled->archive.get(), &*split_archive}) {
    absl::flat_hash_set<std::string> keys;
    for (auto module : archive->index().getModules())
      keys.insert(std::string(reinterpret_cast<const char*>(module.getKey().begin()),
                              module.getKey().size()));
    std::vector<std::string> names;
    for (auto module : archive->index().getModules()) {
      names.push_back(module.getName().cStr());
      for (auto imported : module.getImports())
        EXPECT_TRUE(keys.contains(
            std::string(reinterpret_cast<const char*>(imported.begin()), imported.size())))
            << module.getName().cStr() << " is archived without one of its imports";
    }
    EXPECT_THAT(names, ::testing::IsSupersetOf({"tool.slang", "user.slang", "slangpy"}));
  }
}

}  // namespace
}  // namespace spreplay
