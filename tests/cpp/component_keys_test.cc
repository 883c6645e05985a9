// Module and type conformance keys depend on which file holds what, never on
// where the app is installed.

#include <string>
#include <vector>

#include "common/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interpose/component.h"

namespace spreplay {
namespace {

using ::testing::ElementsAre;

const Digest kRed = Sha256Of("float red() { return 1.0f; }");
const Digest kBlue = Sha256Of("float blue() { return 2.0f; }");

ComponentPtr MainModule(const std::string& root, const Digest& first, const Digest& second) {
  return Component::Module("main", root + "/main.slang", "main", std::nullopt,
                           {{root + "/main.slang", Sha256Of("import first; import second;")},
                            {root + "/first.slang", first},
                            {root + "/second.slang", second}});
}

TEST(ComponentKeysTest, SwappingTheContentsOfTwoFilesChangesAModulesKey) {
  EXPECT_NE(MainModule("/app", kRed, kBlue)->digest, MainModule("/app", kBlue, kRed)->digest);
}

TEST(ComponentKeysTest, AModuleMovedElsewhereKeepsItsKey) {
  EXPECT_EQ(MainModule("/app", kRed, kBlue)->digest,
            MainModule("/srv/deploy/app", kRed, kBlue)->digest);
}

TEST(ComponentKeysTest, TheOrderSlangListsFilesInIsNotKeyed) {
  ComponentPtr listed = MainModule("/app", kRed, kBlue);
  std::vector<SourceFile> reversed(listed->dependencies.rbegin(), listed->dependencies.rend());
  EXPECT_EQ(Component::Module("main", "/app/main.slang", "main", std::nullopt, reversed)->digest,
            listed->digest);
}

TEST(ComponentKeysTest, AStringModuleKeysTheFilesItImportsByName) {
  auto wrapper = [](const Digest& first, const Digest& second) {
    return Component::Module("wrapper", "", "", std::string("import first; import second;"),
                             {{"/venv/lib/first.slang", first}, {"/app/second.slang", second}});
  };
  EXPECT_NE(wrapper(kRed, kBlue)->digest, wrapper(kBlue, kRed)->digest);
}

TEST(ComponentKeysTest, FilesAreNamedByTheShortestPathSuffixThatTellsThemApart) {
  const std::vector<SourceFile> files = {{"/venv/slangpy/slang/tensor.slang", kRed},
                                         {"/app/shaders/tensor.slang", kBlue},
                                         {"/app/shaders/main.slang", kRed},
                                         {"/a/shaders/x.slang", kRed},
                                         {"/b/shaders/x.slang", kRed},
                                         {"x.slang", kBlue}};
  EXPECT_THAT(DistinguishingPathSuffixes(files),
              ElementsAre("slang/tensor.slang", "shaders/tensor.slang", "main.slang",
                          "a/shaders/x.slang", "b/shaders/x.slang", "x.slang"));
}

TEST(ComponentKeysTest, SameContentInTwoFilesIsKeyedOncePerFile) {
  auto module = [](std::vector<SourceFile> files) {
    return Component::Module("m", "/app/m.slang", "m", std::nullopt, std::move(files))->digest;
  };
  EXPECT_NE(module({{"/app/m.slang", kRed}, {"/app/a.slang", kBlue}}),
            module({{"/app/m.slang", kRed}, {"/app/a.slang", kBlue}, {"/app/b.slang", kBlue}}));
}

TEST(ComponentKeysTest, ATypeConformanceIsKeyedWithTheModuleDeclaringItsType) {
  auto conformance = [](const Digest& declaring_content) {
    ComponentPtr declaring = Component::Module("ops", "/app/ops.slang", "ops", std::nullopt,
                                               {{"/app/ops.slang", declaring_content}});
    return Component::TypeConformance("Twice", "IOp", 3, DeclaringFiles(*declaring));
  };
  EXPECT_NE(conformance(kRed)->digest, conformance(kBlue)->digest);
  EXPECT_EQ(conformance(kRed)->digest, conformance(kRed)->digest);
  EXPECT_TRUE(conformance(kRed)->keyable);
}

TEST(ComponentKeysTest, AStringModuleDeclaringATypeIsKeyedByItsText) {
  auto conformance = [](const std::string& text) {
    ComponentPtr declaring = Component::Module("types", "types-pseudo-path", "", text, {});
    return Component::TypeConformance("Twice", "IOp", 3, DeclaringFiles(*declaring));
  };
  EXPECT_NE(conformance("struct Twice : IOp {}")->digest,
            conformance("struct Twice : IOp { int x; }")->digest);
}

}  // namespace
}  // namespace spreplay
