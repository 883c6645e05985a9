#include "interpose/module_cache.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

CompilerOption Option(slang::CompilerOptionName name, std::string text = "", int value = 0) {
  CompilerOption option;
  option.name = static_cast<int32_t>(name);
  option.string0 = std::move(text);
  option.int0 = value;
  return option;
}

TEST(ModuleCacheTest, DropsTheCacheAndNothingElse) {
  const std::string uid(40, 'a');
  const std::vector<CompilerOption> options = {
      Option(slang::CompilerOptionName::UseUpToDateBinaryModule, "", 1),
      Option(slang::CompilerOptionName::Include, "/home/u/.cache/m/" + uid + "/0"),
      Option(slang::CompilerOptionName::Include, "/home/u/.cache/m/" + uid + "/1/"),
      Option(slang::CompilerOptionName::Include, "/venv/slangpy/slang"),
      Option(slang::CompilerOptionName::Include, "/app/0"),
      Option(slang::CompilerOptionName::Include, "/app/" + std::string(40, 'g') + "/1"),
      Option(slang::CompilerOptionName::DebugInformation, "", 0)};
  EXPECT_TRUE(UsesModuleCache(options));
  std::vector<std::string> kept;
  for (const CompilerOption& option : WithoutModuleCache(options))
    kept.push_back(option.string0.empty() ? "debug" : option.string0);
  EXPECT_THAT(kept, ::testing::ElementsAre("/venv/slangpy/slang", "/app/0",
                                           "/app/" + std::string(40, 'g') + "/1", "debug"));
  EXPECT_FALSE(UsesModuleCache(WithoutModuleCache(options)));
}

TEST(ModuleCacheTest, PlacesEntriesAsSglDoes) {
  const std::string uid(40, 'a');
  const std::vector<CompilerOption> options = {
      Option(slang::CompilerOptionName::UseUpToDateBinaryModule, "", 1),
      Option(slang::CompilerOptionName::Include, "/c/" + uid + "/0"),
      Option(slang::CompilerOptionName::Include, "/c/" + uid + "/1/"),
      Option(slang::CompilerOptionName::Include, "/venv/slangpy/slang"),
      Option(slang::CompilerOptionName::Include, "/app")};
  const ModuleCacheLayout layout = ModuleCacheLayoutOf(options);
  ASSERT_EQ(layout.size(), 2u);
  EXPECT_EQ(ModuleCacheEntry(layout, "/app/sub/user.slang"),
            "/c/" + uid + "/1/sub/user.slang-module");
  EXPECT_EQ(ModuleCacheEntry(layout, "/venv/slangpy/slang/slangpy.slang"),
            "/c/" + uid + "/0/slangpy.slang-module");
  EXPECT_EQ(ModuleCacheEntry(layout, "/elsewhere/user.slang"), std::nullopt);
  EXPECT_EQ(ModuleCacheEntry(layout, "/c/" + uid + "/1/user.slang-module"), std::nullopt);
  // Not sgl's layout: a cache directory missing.
  EXPECT_TRUE(ModuleCacheLayoutOf({options[0], options[1], options[3], options[4]}).empty());
}

TEST(ModuleCacheTest, ZeroesTheDigestOfAModuleAndMakesItALibrary) {
  // RIFF "smod" { "name" "m", "SHA1" <20 bytes> }
  auto chunk = [](std::string tag, std::string payload) {
    std::string out = tag;
    const uint32_t size = static_cast<uint32_t>(payload.size());
    out.append(reinterpret_cast<const char*>(&size), 4);
    out += payload;
    out.resize((out.size() + 7) & ~size_t{7}, '\0');
    return out;
  };
  const std::string children = chunk("name", "m") + chunk("SHA1", std::string(20, 'x'));
  std::string module = "RIFF";
  const uint32_t size = static_cast<uint32_t>(8 + children.size());
  module.append(reinterpret_cast<const char*>(&size), 4);
  module += "smod";
  module.append(4, '\0');
  module += children;
  const std::optional<std::string> library = AsModuleLibraryWithoutDigest(module);
  ASSERT_TRUE(library.has_value());
  EXPECT_EQ(library->substr(0, 4), "RIFF");
  EXPECT_EQ(library->substr(8, 4), "SLmc");
  EXPECT_EQ(library->substr(16, 4), "LIST");
  EXPECT_EQ(library->substr(24, 4), "SLml");
  EXPECT_EQ(library->substr(32, 4), "LIST");
  EXPECT_EQ(library->substr(40, 4), "smod");
  EXPECT_EQ(library->find('x'), std::string::npos);
  EXPECT_EQ(library->size(), module.size() + 32);
  EXPECT_EQ(AsModuleLibraryWithoutDigest("RIFF"), std::nullopt);
  EXPECT_EQ(AsModuleLibraryWithoutDigest(module.substr(0, module.size() - 8)), std::nullopt);
}

}  // namespace
}  // namespace spreplay
