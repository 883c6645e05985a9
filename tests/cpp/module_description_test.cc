// A module loaded from a string, described with the imports the hooks served
// from IR: each served import's files are listed once, whether Slang listed
// them or not, so that the description, and the kernel keys made from it, are
// those of a load from source. Real Slang, no GPU.

#include "interpose/module_description.h"

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cpp/hooked_slang.h"

namespace spreplay {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// A file name longer than a short string holds, as most are.
constexpr const char* kHelperName = "helper_of_the_importer";
constexpr const char* kHelperFile = "helper_of_the_importer.slang";
constexpr const char* kImporter =
    "import helper_of_the_importer;\nfloat twice(float x) { return helper_mul(x, 2.0f); }\n";

class ServedImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Hooks();
    sources_.Write(kHelperFile, kHelperModule);
    global_ = NewHookedGlobalSession();
    SglCudaSessionDesc desc(global_.get(), {sources_.path().string()}, 0);
    ASSERT_EQ(global_->createSession(desc.desc(), session_.WriteRef()), SLANG_OK);
    ComPtr<ISlangBlob> diagnostics;
    module_ = session_->loadModuleFromSourceString("importer", nullptr, kImporter,
                                                   diagnostics.WriteRef());
    ASSERT_NE(module_, nullptr) << Diagnostics(diagnostics);
  }

  std::string Helper() const { return (sources_.path() / kHelperFile).string(); }

  // Each dependency's file name, as the description lists them.
  std::vector<std::string> Describe(const ServedImportNamed& served) {
    const ModuleRequest request{"", std::string(kImporter), ""};
    absl::StatusOr<ComponentPtr> description = DescribeLoadedModule(
        module_, request, [](const std::string& path) { return Sha256Of(path); }, served);
    EXPECT_TRUE(description.ok()) << description.status();
    std::vector<std::string> names;
    if (!description.ok()) return names;
    for (const SourceFile& file : (*description)->dependencies)
      names.push_back(std::filesystem::path(file.path).filename().string());
    return names;
  }

  TempDir sources_;
  ComPtr<slang::IGlobalSession> global_;
  ComPtr<slang::ISession> session_;
  slang::IModule* module_ = nullptr;
};

TEST_F(ServedImportTest, AFileSlangListsIsListedOnce) {
  ASSERT_THAT(Describe(nullptr), ElementsAre(kHelperFile));
  EXPECT_THAT(Describe([&](const std::string& name) -> std::optional<ServedImport> {
                if (name != kHelperName) return std::nullopt;
                return ServedImport{{{Helper(), Sha256Of(Helper())}}};
              }),
              ElementsAre(kHelperFile));
}

TEST_F(ServedImportTest, AFileSlangListsUnderAnotherSpellingIsListedOnce) {
  const std::string spelled = (sources_.path() / "." / kHelperFile).string();
  EXPECT_THAT(Describe([&](const std::string& name) -> std::optional<ServedImport> {
                if (name != kHelperName) return std::nullopt;
                return ServedImport{{{spelled, Sha256Of(Helper())}}};
              }),
              ElementsAre(kHelperFile));
}

TEST_F(ServedImportTest, AServedImportsFileSlangLeftOutIsAdded) {
  const std::string other = (sources_.path() / "util.slang").string();
  EXPECT_THAT(Describe([&](const std::string& name) -> std::optional<ServedImport> {
                if (name != kHelperName) return std::nullopt;
                return ServedImport{{{Helper(), Sha256Of(Helper())}, {other, Sha256Of(other)}}};
              }),
              UnorderedElementsAre(kHelperFile, "util.slang"));
}

}  // namespace
}  // namespace spreplay
