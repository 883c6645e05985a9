// Module loads the archive must find however sgl asks for them: a module
// asked for by absolute path (sgl's load_program(path, ...)), and one
// imported before it is asked for by name. Real Slang, hooks installed, no
// GPU. (Wrappers whose names slangpy derived from more than their text:
// module_serving_test.cc, ServedModulesDispatchTest.)

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/whole_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/archive_modules.h"
#include "tests/cpp/hooked_slang.h"
#include "tests/cpp/record_and_compile.h"

namespace spreplay {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// sgl's SlangSession::load_program(module_name, {"main"}): load_module, whose
// resolve_module_name leaves an absolute path as it is, then the entry point
// by name, composed with its module and linked (shader.cpp).
absl::Status LoadProgram(slang::ISession* session, const std::string& module_name) {
  ComPtr<ISlangBlob> diagnostics;
  slang::IModule* module = session->loadModule(module_name.c_str(), diagnostics.WriteRef());
  if (!module) return absl::InternalError("loadModule: " + Diagnostics(diagnostics));
  ComPtr<slang::IEntryPoint> entry_point;
  if (SLANG_FAILED(module->findEntryPointByName("main", entry_point.WriteRef())))
    return absl::InternalError("no main");
  absl::StatusOr<std::string> code = ComposeAndGenerate(session, {module, entry_point.get()});
  return code.ok() ? absl::OkStatus() : code.status();
}

struct Served {
  std::vector<Recording> kernels;
  std::vector<MissRecord> misses;
  uint64_t served = 0;
  uint64_t compiled = 0;
};

Served ServeSession(const Archive& archive, const std::vector<std::string>& include_paths,
                    const std::function<absl::Status(slang::ISession*)>& run) {
  ArchiveModules modules(archive, /*strict=*/false);
  Switch().Use(&modules);
  const HookCounts before = GetHookCounts();
  ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
  Served served;
  served.kernels = RecordSession(live.get(), include_paths, 0, run);
  const HookCounts after = GetHookCounts();
  Switch().Use(nullptr);
  served.misses = modules.misses();
  served.served = after.modules_served - before.modules_served;
  served.compiled = after.modules_compiled - before.modules_compiled;
  return served;
}

// load_program by an absolute path that no root (slangpy, a search
// path, the working directory) holds.
class LoadProgramByPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Switch();
    EXPECT_TRUE(TakeOverWorkingDirectoryForNvrtc());
    sources_.Write("shaders/program.slang", kProgramModule);
    sources_.Write("shaders/helper.slang", kHelperModule);
    absl::StatusOr<Compiled> compiled = RecordAndCompile(work_.path(), [&] {
      ScopedChdir cwd(elsewhere_.path());
      ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
      return RecordSession(live.get(), {WheelSlangDirectory()}, 0, [&](slang::ISession* session) {
        return LoadProgram(session, (sources_.path() / "shaders/program.slang").string());
      });
    });
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    ASSERT_EQ(compiled->recordings.size(), 1u);
    ASSERT_EQ(compiled->report.failed(), 0u);
    EXPECT_EQ(compiled->report.modules_archived, 2u);  // helper, program
    compiled_ = std::move(compiled).value();
  }

  Served ServeFrom(const TempDir& root, const TempDir& cwd) {
    ScopedChdir in(cwd.path());
    return ServeSession(*compiled_.archive, {WheelSlangDirectory()}, [&](slang::ISession* session) {
      return LoadProgram(session, (root.path() / "shaders/program.slang").string());
    });
  }

  TempDir work_, sources_, elsewhere_;
  Compiled compiled_;
};

TEST_F(LoadProgramByPathTest, IsServedInPlace) {
  const Served served = ServeFrom(sources_, elsewhere_);
  EXPECT_THAT(Reasons(served.misses), IsEmpty());
  EXPECT_EQ(served.served, 2u);
  EXPECT_EQ(served.compiled, 0u);
}

TEST_F(LoadProgramByPathTest, IsServedFromItsNewPlace) {
  TempDir moved;
  std::filesystem::copy(sources_.path(), moved.path(), std::filesystem::copy_options::recursive);
  sources_.Remove();
  const Served served = ServeFrom(moved, elsewhere_);
  EXPECT_THAT(Reasons(served.misses), IsEmpty());
  EXPECT_EQ(served.served, 2u);
  EXPECT_EQ(served.compiled, 0u);
}

TEST_F(LoadProgramByPathTest, AMovedAppWithAnEditedImportLoadsFromSource) {
  TempDir moved;
  std::filesystem::copy(sources_.path(), moved.path(), std::filesystem::copy_options::recursive);
  moved.Write("shaders/helper.slang",
              "public float helper_mul(float a, float b) { return a * b + 2.0f; }\n");
  const Served served = ServeFrom(moved, elsewhere_);
  ASSERT_FALSE(served.misses.empty());
  EXPECT_THAT(served.misses[0].reason, HasSubstr("helper.slang changed"));
  EXPECT_EQ(served.served, 0u);
  ASSERT_EQ(served.kernels.size(), 1u);
  EXPECT_NE(served.kernels[0].code, compiled_.recordings[0].code);
}

// slangpy's Module.load_from_file by an absolute path no root holds, then a
// call site of it: the wrapper, loaded from a string, imports that module by
// name, and the files of its imports lie below the directory of that earlier
// request, not of the wrapper's (which names no path).
class CallSiteOfAModuleLoadedByPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Switch();
    EXPECT_TRUE(TakeOverWorkingDirectoryForNvrtc());
    sources_.Write("shaders/user.slang", kUserModule);
    sources_.Write("shaders/helper.slang", kHelperModule);
    absl::StatusOr<Compiled> compiled = RecordAndCompile(work_.path(), [&] {
      ScopedChdir cwd(WorkingDirectory());
      ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
      return RecordSession(live.get(), {WheelSlangDirectory()}, 0, [&](slang::ISession* session) {
        return BuildCallSite(session, sources_);
      });
    });
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    ASSERT_EQ(compiled->recordings.size(), 1u);
    ASSERT_EQ(compiled->report.failed(), 0u);
    EXPECT_EQ(compiled->report.modules_refused, 0u);
    compiled_ = std::move(compiled).value();
  }

  static absl::Status BuildCallSite(slang::ISession* session, const TempDir& root) {
    const std::string path = (root.path() / "shaders/user.slang").string();
    ComPtr<ISlangBlob> diagnostics;
    slang::IModule* user = session->loadModule(path.c_str(), diagnostics.WriteRef());
    if (!user) return absl::InternalError("loadModule: " + Diagnostics(diagnostics));
    // spy.Module asks for slangpy's library by name (slangpy/core/module.py:
    // session.load_module("slangpy"), which sgl resolves to "slangpy.slang").
    if (!session->loadModule("slangpy.slang", diagnostics.WriteRef()))
      return absl::InternalError("loadModule: " + Diagnostics(diagnostics));
    // slangpy's wrapper imports the module by the name Slang gave it
    // (calldata.py: import "{module.name}").
    std::string body = kWrapperBody;
    body.replace(body.find("import user;"), 12, fmt::format("import \"{}\";", user->getName()));
    return CompileCallSite(session, path, fmt::format("call_site_{:040x}", 1), body).status();
  }

  Served ServeFrom(const TempDir& root) { return ServeFrom(root, *compiled_.archive); }

  // The app's: another directory than its modules'.
  virtual std::filesystem::path WorkingDirectory() const { return elsewhere_.path(); }

  Served ServeFrom(const TempDir& root, const Archive& archive) {
    ScopedChdir in(WorkingDirectory());
    return ServeSession(archive, {WheelSlangDirectory()},
                        [&](slang::ISession* session) { return BuildCallSite(session, root); });
  }

  // Served from a copy of the archive whose slangpy library is damaged: the
  // library loads from source, and the wrapper that imports it with it.
  void ExpectTheKeyKeptWithSlangpysLibraryDamaged() {
    const std::vector<std::byte> bytes = WithSlangpysLibraryDamaged();
    ASSERT_FALSE(bytes.empty());
    absl::StatusOr<Archive> damaged = Archive::Open(bytes, "damaged.sprk");
    ASSERT_TRUE(damaged.ok()) << damaged.status();
    const Served served = ServeFrom(sources_, *damaged);
    EXPECT_THAT(Reasons(served.misses), ::testing::Contains(HasSubstr("fails its checksum")));
    ASSERT_EQ(served.kernels.size(), 1u);
    EXPECT_EQ(served.kernels[0].program->digest, compiled_.recordings[0].program->digest);
    EXPECT_EQ(served.kernels[0].code, compiled_.recordings[0].code);
  }

  // The archive's bytes with one byte flipped in the middle of slangpy's
  // library's IR, which then fails its checksum.
  std::vector<std::byte> WithSlangpysLibraryDamaged() {
    const auto modules = compiled_.archive->index().getModules();
    std::vector<std::byte> bytes;
    for (unsigned i = 0; i < modules.size(); ++i) {
      if (std::string_view(modules[i].getName().cStr()) != "slangpy") continue;
      const absl::StatusOr<std::string> file = ReadFile((work_.path() / "kernels.sprk").string());
      EXPECT_TRUE(file.ok()) << file.status();
      if (!file.ok()) break;
      bytes.resize(file->size());
      std::memcpy(bytes.data(), file->data(), file->size());
      const auto blob = modules[i].getBlob();
      bytes[blob.getOffset() + blob.getSize() / 2] ^= std::byte{0xff};
    }
    EXPECT_FALSE(bytes.empty()) << "no module of slangpy's library in the archive";
    return bytes;
  }

  TempDir work_, sources_, elsewhere_;
  Compiled compiled_;
};

TEST_F(CallSiteOfAModuleLoadedByPathTest, IsServedInPlace) {
  const Served served = ServeFrom(sources_);
  EXPECT_THAT(Reasons(served.misses), IsEmpty());
  EXPECT_EQ(served.served, compiled_.report.modules_archived);
  EXPECT_EQ(served.compiled, 0u);
  ASSERT_EQ(served.kernels.size(), 1u);
  EXPECT_EQ(served.kernels[0].code, compiled_.recordings[0].code);
}

TEST_F(CallSiteOfAModuleLoadedByPathTest, IsServedFromItsNewPlace) {
  TempDir moved;
  std::filesystem::copy(sources_.path(), moved.path(), std::filesystem::copy_options::recursive);
  sources_.Remove();
  const Served served = ServeFrom(moved);
  EXPECT_THAT(Reasons(served.misses), IsEmpty());
  EXPECT_EQ(served.served, compiled_.report.modules_archived);
  EXPECT_EQ(served.compiled, 0u);
}

// The library loads from source, and the wrapper that imports it with it: the
// kernel's key must not change, whether the user's module, asked for by path,
// is served as IR or not.
TEST_F(CallSiteOfAModuleLoadedByPathTest, KeepsItsKeyWhenSlangpysLibraryLoadsFromSource) {
  ExpectTheKeyKeptWithSlangpysLibraryDamaged();
}

// The app runs from a directory its module lies below (tests/gpu's hardening
// app, run from the repository).
class CallSiteOfAModuleBelowTheWorkingDirectoryTest : public CallSiteOfAModuleLoadedByPathTest {
 protected:
  std::filesystem::path WorkingDirectory() const override { return sources_.path(); }
};

TEST_F(CallSiteOfAModuleBelowTheWorkingDirectoryTest,
       KeepsItsKeyWhenSlangpysLibraryLoadsFromSource) {
  ExpectTheKeyKeptWithSlangpysLibraryDamaged();
}

// A module the recording only imported ("helper"), asked for by name first
// when served ("helper.slang"): the archive holds no module of that name, and
// the IR of its importers names it "helper", which the module Slang now holds
// is not. They load from source, said why, instead of tripping Slang.
TEST(ImportedModuleTest, AModuleOnlyImportedThenRequestedFirstLoadsItsImportersFromSource) {
  Switch();
  EXPECT_TRUE(TakeOverWorkingDirectoryForNvrtc());
  TempDir work, sources;
  sources.Write("user.slang", kUserModule);
  sources.Write("helper.slang", kHelperModule);
  const std::vector<std::string> include_paths = {WheelSlangDirectory(), sources.path().string()};
  absl::StatusOr<Compiled> compiled = RecordAndCompile(work.path(), [&] {
    ComPtr<slang::IGlobalSession> live = NewHookedGlobalSession();
    return RecordCallSites(live.get(), include_paths, {kWrapperBody});
  });
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const Served served =
      ServeSession(*compiled->archive, include_paths, [&](slang::ISession* session) {
        ComPtr<ISlangBlob> diagnostics;
        slang::IModule* helper = session->loadModule("helper.slang", diagnostics.WriteRef());
        if (!helper) return absl::InternalError("loadModule: " + Diagnostics(diagnostics));
        absl::StatusOr<std::string> code = CompileCallSite(
            session, "user.slang", fmt::format("call_site_{:040x}", 1), kWrapperBody);
        return code.ok() ? absl::OkStatus() : code.status();
      });
  const std::vector<std::string> reasons = Reasons(served.misses);
  ASSERT_FALSE(reasons.empty());
  EXPECT_THAT(reasons[0], HasSubstr("no module requested by this name"));
  EXPECT_THAT(reasons, ::testing::Contains(HasSubstr("which the IR names 'helper'")));
  EXPECT_THAT(reasons, ::testing::Not(::testing::Contains(HasSubstr("assert"))));
  EXPECT_EQ(served.compiled, 3u);  // helper.slang, user.slang, the wrapper
  ASSERT_EQ(served.kernels.size(), 1u);
  EXPECT_EQ(served.kernels[0].code, compiled->recordings[0].code);
}

}  // namespace
}  // namespace spreplay
