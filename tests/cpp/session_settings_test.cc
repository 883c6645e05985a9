#include "interpose/session_settings.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

using ::testing::Contains;

CompilerOption IntOption(slang::CompilerOptionName name, int value) {
  CompilerOption option;
  option.name = static_cast<int32_t>(name);
  option.kind = static_cast<int32_t>(slang::CompilerOptionValueKind::Int);
  option.int0 = value;
  return option;
}

CompilerOption StringOption(slang::CompilerOptionName name, std::string first,
                            std::string second = "") {
  CompilerOption option;
  option.name = static_cast<int32_t>(name);
  option.kind = static_cast<int32_t>(slang::CompilerOptionValueKind::String);
  option.string0 = std::move(first);
  option.string1 = std::move(second);
  return option;
}

SessionConfig SglLikeConfig() {
  SessionConfig config;
  config.slangpy_directory = "/venv/site-packages/slangpy";
  TargetConfig target;
  target.format = SLANG_PTX;
  config.targets.push_back(target);
  config.macros = {{"__TARGET_CUDA__", "1"}};
  config.options = {IntOption(slang::CompilerOptionName::DebugInformation, 0),
                    StringOption(slang::CompilerOptionName::Include, "/app/shaders"),
                    StringOption(slang::CompilerOptionName::DownstreamArgs, "nvrtc",
                                 "-I/venv/site-packages/slangpy/optix/9.0")};
  return config;
}

TEST(SessionSettingsTest, NamesOptionsAndLeavesLocationsOut) {
  const std::vector<std::string> settings = KeyedSettings(SglLikeConfig());
  EXPECT_THAT(settings, Contains("DebugInformation = 0"));
  EXPECT_THAT(settings, Contains("DownstreamArgs = nvrtc -I<slangpy>/optix/9.0"));
  EXPECT_THAT(settings, Contains("define __TARGET_CUDA__ = 1"));
  for (const std::string& line : settings) EXPECT_EQ(line.find("/app/shaders"), std::string::npos);
  EXPECT_TRUE(std::is_sorted(settings.begin(), settings.end()));
}

TEST(SessionSettingsTest, AChangeNamesBothSides) {
  SessionConfig changed = SglLikeConfig();
  changed.options.push_back(IntOption(slang::CompilerOptionName::Optimization, 3));
  changed.options[0].int0 = 2;
  EXPECT_EQ(DescribeSettingsChange(KeyedSettings(SglLikeConfig()), KeyedSettings(changed)),
            "DebugInformation = 2; Optimization = 3 here, against DebugInformation = 0 "
            "in the archive");
  EXPECT_EQ(DescribeSettingsChange(KeyedSettings(changed), KeyedSettings(changed)), "");
}

TEST(SessionSettingsTest, AModuleCacheChangesNoKey) {
  // slangpy's module_cache_path adds UseUpToDateBinaryModule and cache
  // directories ahead of the include paths: neither changes what compiles.
  SessionConfig cached = SglLikeConfig();
  cached.options.insert(cached.options.begin(),
                        StringOption(slang::CompilerOptionName::Include, "/cache/uid/0"));
  cached.options.push_back(IntOption(slang::CompilerOptionName::UseUpToDateBinaryModule, 1));
  EXPECT_EQ(cached.ContentDigest(), SglLikeConfig().ContentDigest());
  EXPECT_EQ(KeyedSettings(cached), KeyedSettings(SglLikeConfig()));
}

TEST(SessionSettingsTest, SettingsDifferExactlyWhenTheSessionDigestDoes) {
  SessionConfig moved = SglLikeConfig();
  moved.slangpy_directory = "/other/slangpy";
  moved.options[2].string1 = "-I/other/slangpy/optix/9.0";
  moved.options[1].string0 = "/elsewhere/shaders";
  EXPECT_EQ(moved.ContentDigest(), SglLikeConfig().ContentDigest());
  EXPECT_EQ(KeyedSettings(moved), KeyedSettings(SglLikeConfig()));
}

TEST(SessionSettingsTest, UnknownOptionsAreNumbered) {
  EXPECT_EQ(CompilerOptionNameText(9999), "option 9999");
  EXPECT_EQ(CompilerOptionNameText(static_cast<int32_t>(slang::CompilerOptionName::Optimization)),
            "Optimization");
}

}  // namespace
}  // namespace spreplay
