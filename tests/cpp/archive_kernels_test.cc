// Serving from an archive: what is served, what misses and why, and what
// strict mode refuses. The GPU's architectures are given, so this runs
// without a GPU; tests/gpu/ proves the same on one.

#include "runtime/archive_kernels.h"

#include <unistd.h>

#include <filesystem>

#include "archive/archive_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interpose/session_settings.h"

namespace spreplay {
namespace {

using ::testing::HasSubstr;

constexpr char kToolchain[] = "slangpy 0.43.1 slang 2026.12";

// slangpy names wrappers by a hash of their text; these stand for such names.
const std::string kWrapper(64, 'a');
const std::string kMovedWrapper(64, 'b');

ComponentPtr Program(const std::string& wrapper_name, const std::string& util_source) {
  auto wrapper = Component::Module(
      wrapper_name, "", wrapper_name, "// " + wrapper_name + "\nimport user;",
      {{"/app/user.slang", Sha256Of("import util;")}, {"/app/util.slang", Sha256Of(util_source)}});
  auto entry = Component::EntryPoint(wrapper, "compute_main", kFoundByName);
  return Component::Linked(Component::Composite({wrapper, entry}), {});
}

// A device's session, compiling with debug information at `debug_info`.
SessionConfig Config(int debug_info) {
  SessionConfig config;
  CompilerOption option;
  option.name = static_cast<int32_t>(slang::CompilerOptionName::DebugInformation);
  option.kind = static_cast<int32_t>(slang::CompilerOptionValueKind::Int);
  option.int0 = debug_info;
  config.options.push_back(option);
  return config;
}

KernelRequest Request(const ComponentPtr& program, const SessionConfig& config = Config(0)) {
  auto session = std::make_shared<SessionInfo>();
  session->config = config;
  session->digest = config.ContentDigest();
  KernelRequest request;
  request.session = session;
  request.program = program;
  request.toolchain = kToolchain;
  request.key = KernelKey({kToolchain, session->digest, program->digest, 0, 0});
  return request;
}

class ArchiveKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("archive-kernels-test-" + std::to_string(getpid())))
                .string();
    const KernelRequest request = Request(Program(kWrapper, "int k = 1;"));
    ArchiveWriter writer({kToolchain, "test", 0, "", ""});
    KernelMetadata metadata;
    metadata.key = request.key;
    metadata.call_site = {"/app/user.slang", "add", "call", kWrapper, "compute_main"};
    metadata.manifest = {{Sha256Of("import util;"), "/app/user.slang"},
                         {Sha256Of("int k = 1;"), "/app/util.slang"}};
    metadata.session_digest = request.session->digest;
    metadata.program_digest = request.program->digest;
    metadata.sass_arches = {80, 90};
    metadata.ptx_arch = 75;
    const std::string fatbin = "fatbin bytes";
    std::vector<KernelBinary> binaries;
    binaries.push_back({schema::BlobKind::FATBIN, 0,
                        std::vector<std::byte>(
                            reinterpret_cast<const std::byte*>(fatbin.data()),
                            reinterpret_cast<const std::byte*>(fatbin.data()) + fatbin.size())});
    ASSERT_TRUE(writer.Add(metadata, std::move(binaries)).ok());
    writer.AddSessionSettings(request.session->digest, KeyedSettings(request.session->config));
    writer.AddUnbuilt({Request(Program(kWrapper, "int k = 9;")).key, metadata.call_site,
                       "Slang could not rebuild it: error 30015\nthe whole compiler log"});
    ASSERT_TRUE(writer.Write(path_).ok());
  }
  void TearDown() override { std::filesystem::remove(path_); }

  std::unique_ptr<ArchiveKernels> Open(bool strict, std::vector<uint32_t> arches) {
    ServingOptions options;
    options.strict = strict;
    options.warn = false;
    options.arches = [arches]() -> absl::StatusOr<std::vector<uint32_t>> { return arches; };
    absl::StatusOr<std::unique_ptr<ArchiveKernels>> kernels = ArchiveKernels::Open(path_, options);
    EXPECT_TRUE(kernels.ok()) << kernels.status();
    return kernels.ok() ? *std::move(kernels) : nullptr;
  }

  std::string path_;
};

TEST_F(ArchiveKernelsTest, ServesTheArchivedFatbin) {
  auto kernels = Open(false, {90});
  ServedKernel served;
  std::string refusal;
  ASSERT_EQ(kernels->DecideKernel(Request(Program(kWrapper, "int k = 1;")), &served, &refusal),
            KernelDecision::kServe);
  EXPECT_EQ(std::string(static_cast<const char*>(served.data), served.size), "fatbin bytes");
  EXPECT_TRUE(kernels->misses().empty());
}

TEST_F(ArchiveKernelsTest, AGpuWithoutSassInTheArchiveCompilesInsteadOfJitting) {
  auto kernels = Open(false, {100});
  ServedKernel served;
  std::string refusal;
  EXPECT_EQ(kernels->DecideKernel(Request(Program(kWrapper, "int k = 1;")), &served, &refusal),
            KernelDecision::kPass);
  ASSERT_EQ(kernels->misses().size(), 1u);
  EXPECT_THAT(kernels->misses()[0].reason, HasSubstr("no SASS for this GPU (sm_100"));
}

TEST_F(ArchiveKernelsTest, AChangedImportedFileMissesAndSaysWhich) {
  auto kernels = Open(false, {90});
  ServedKernel served;
  std::string refusal;
  EXPECT_EQ(kernels->DecideKernel(Request(Program(kWrapper, "int k = 2;")), &served, &refusal),
            KernelDecision::kPass);
  ASSERT_EQ(kernels->misses().size(), 1u);
  EXPECT_THAT(kernels->misses()[0].reason,
              HasSubstr("source changed since the archive was built: util.slang"));
}

TEST_F(ArchiveKernelsTest, AMovedAppIsRecognisedByItsCallSiteName) {
  auto kernels = Open(false, {90});
  // slangpy names the wrapper of a moved app differently; the Python hooks
  // tell which call site it is.
  kernels->NameCallSite(kMovedWrapper, {"/elsewhere/user.slang", "add", "call"});
  ServedKernel served;
  std::string refusal;
  EXPECT_EQ(kernels->DecideKernel(Request(Program(kMovedWrapper, "int k = 2;")), &served, &refusal),
            KernelDecision::kPass);
  ASSERT_EQ(kernels->misses().size(), 1u);
  EXPECT_EQ(kernels->misses()[0].call_site, "/elsewhere/user.slang.add (call)");
  EXPECT_THAT(kernels->misses()[0].reason, HasSubstr("util.slang"));
}

TEST_F(ArchiveKernelsTest, StrictModeRefusesAMissWithWhatToDo) {
  auto kernels = Open(true, {90});
  ServedKernel served;
  std::string refusal;
  EXPECT_EQ(kernels->DecideKernel(Request(Program(kWrapper, "int k = 3;")), &served, &refusal),
            KernelDecision::kRefuse);
  EXPECT_THAT(refusal, HasSubstr("SLANGPY_KERNELS_STRICT"));
  EXPECT_THAT(refusal, HasSubstr("record it and rebuild the archive"));
}

TEST_F(ArchiveKernelsTest, AKernelCompileCouldNotBuildSaysWhatCompileSaid) {
  auto kernels = Open(false, {90});
  ServedKernel served;
  std::string refusal;
  EXPECT_EQ(kernels->DecideKernel(Request(Program(kWrapper, "int k = 9;")), &served, &refusal),
            KernelDecision::kPass);
  ASSERT_EQ(kernels->misses().size(), 1u);
  EXPECT_THAT(kernels->misses()[0].reason,
              HasSubstr("recorded, but `spreplay compile` could not build it: Slang could not "
                        "rebuild it: error 30015 (more in"));
  EXPECT_THAT(kernels->misses()[0].reason, ::testing::Not(HasSubstr("compiler log")));
}

TEST_F(ArchiveKernelsTest, AnotherCompilerSettingIsNamed) {
  auto kernels = Open(false, {90});
  ServedKernel served;
  std::string refusal;
  EXPECT_EQ(
      kernels->DecideKernel(Request(Program(kWrapper, "int k = 1;"), Config(2)), &served, &refusal),
      KernelDecision::kPass);
  ASSERT_EQ(kernels->misses().size(), 1u);
  EXPECT_THAT(kernels->misses()[0].reason,
              HasSubstr("compiler settings differ from the archive's: DebugInformation = 2 here, "
                        "against DebugInformation = 0 in the archive"));
}

TEST_F(ArchiveKernelsTest, AProgramSpreplayCannotKeySaysWhy) {
  auto kernels = Open(true, {90});
  auto wrapper = Program(kWrapper, "int k = 1;")->children[0]->children[0];
  auto program = Component::Linked(
      Component::Composite(
          {wrapper, Component::Opaque("type conformance A : I has an automatic id")}),
      {});
  ServedKernel served;
  std::string refusal;
  EXPECT_EQ(kernels->DecideKernel(Request(program), &served, &refusal), KernelDecision::kRefuse);
  ASSERT_EQ(kernels->misses().size(), 1u);
  EXPECT_EQ(kernels->misses()[0].reason, "not keyable: type conformance A : I has an automatic id");
  EXPECT_TRUE(kernels->misses()[0].refused);
}

TEST_F(ArchiveKernelsTest, AnArchiveForAnotherToolchainServesNothing) {
  auto kernels = Open(false, {90});
  kernels->OnToolchainKnown("slangpy 0.44.0 slang 2026.13", "2026.13");
  ServedKernel served;
  std::string refusal;
  EXPECT_EQ(kernels->DecideKernel(Request(Program(kWrapper, "int k = 1;")), &served, &refusal),
            KernelDecision::kPass);
  EXPECT_THAT(kernels->disabled_reason(), HasSubstr("was built for slangpy 0.43.1"));
}

TEST_F(ArchiveKernelsTest, AWrapperNamedDifferentlyWithTheSameCodeIsServed) {
  // The name is slangpy's hash of text that holds import paths; the key
  // holds the text with those normalized, so a moved app still hits.
  auto kernels = Open(false, {90});
  ServedKernel served;
  std::string refusal;
  EXPECT_EQ(kernels->DecideKernel(Request(Program(kMovedWrapper, "int k = 1;")), &served, &refusal),
            KernelDecision::kServe);
}

TEST(KernelKeyTest, EveryInputChangesTheKey) {
  const KernelKeyInputs base{kToolchain, Sha256Of("session"), Sha256Of("program"), 0, 0};
  const Digest key = KernelKey(base);
  KernelKeyInputs changed = base;
  changed.toolchain = "slangpy 0.43.2 slang 2026.12";
  EXPECT_NE(KernelKey(changed), key);
  changed = base;
  changed.session = Sha256Of("other session");
  EXPECT_NE(KernelKey(changed), key);
  changed = base;
  changed.program = Sha256Of("other program");
  EXPECT_NE(KernelKey(changed), key);
  changed = base;
  changed.entry_point_index = 1;
  EXPECT_NE(KernelKey(changed), key);
  changed = base;
  changed.target_index = 1;
  EXPECT_NE(KernelKey(changed), key);
  EXPECT_EQ(KernelKey(base), key);
}

}  // namespace
}  // namespace spreplay
