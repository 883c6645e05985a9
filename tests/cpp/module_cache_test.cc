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

}  // namespace
}  // namespace spreplay
