// Trace records round-trip the descriptions kernel keys are made of, and a
// record whose content does not match its digest is refused.

#include "recorder/record_encoding.h"

#include <capnp/message.h>

#include <functional>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

using ::testing::HasSubstr;

SessionConfig SampleSession() {
  SessionConfig config;
  TargetConfig target;
  target.format = SLANG_PTX;
  target.floating_point_mode = 1;
  target.force_glsl_scalar_buffer_layout = true;
  target.options.push_back(
      {static_cast<int32_t>(slang::CompilerOptionName::GLSLForceScalarLayout), 0, 1, 0, "", ""});
  config.targets.push_back(target);
  config.search_paths = {"/opt/app/shaders"};
  config.macros = {{"__TARGET_CUDA__", "1"}};
  config.slangpy_directory = "/venv/site-packages/slangpy";
  config.options.push_back({static_cast<int32_t>(slang::CompilerOptionName::Include), 1, 0, 0,
                            "/venv/site-packages/slangpy/slang", ""});
  config.options.push_back({static_cast<int32_t>(slang::CompilerOptionName::DownstreamArgs), 1, 0,
                            0, "nvrtc", "-I/venv/site-packages/slangpy/optix/9_0"});
  return config;
}

TEST(RecordEncodingTest, SessionsRoundTrip) {
  const SessionConfig config = SampleSession();
  capnp::MallocMessageBuilder message;
  EncodeSession(config, message.initRoot<trace_schema::Session>());
  absl::StatusOr<SessionConfig> decoded =
      DecodeSession(message.getRoot<trace_schema::Session>().asReader());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->ContentDigest(), config.ContentDigest());
  EXPECT_EQ(decoded->LocationDigest(), config.LocationDigest());
  EXPECT_EQ(decoded->options, config.options);
  EXPECT_EQ(decoded->search_paths, config.search_paths);
}

TEST(RecordEncodingTest, SessionKeysIgnoreWhereSlangpyAndIncludesLive) {
  SessionConfig here = SampleSession();
  SessionConfig there = SampleSession();
  there.slangpy_directory = "/home/user/env/lib/slangpy";
  there.search_paths = {"/srv/app/shaders"};
  there.options[0].string0 = "/home/user/env/lib/slangpy/slang";
  there.options[1].string1 = "-I/home/user/env/lib/slangpy/optix/9_0";
  EXPECT_EQ(here.ContentDigest(), there.ContentDigest());
  EXPECT_NE(here.LocationDigest(), there.LocationDigest());
  there.macros[0].second = "2";
  EXPECT_NE(here.ContentDigest(), there.ContentDigest());
}

TEST(RecordEncodingTest, TamperedSessionIsRefused) {
  capnp::MallocMessageBuilder message;
  auto record = message.initRoot<trace_schema::Session>();
  EncodeSession(SampleSession(), record);
  record.getMacros()[0].setValue("2");
  absl::StatusOr<SessionConfig> decoded = DecodeSession(record.asReader());
  ASSERT_FALSE(decoded.ok());
  EXPECT_THAT(std::string(decoded.status().message()), HasSubstr("does not hash to its digest"));
}

ComponentPtr SampleProgram(const std::string& util_source) {
  auto user = Component::Module(
      "user", "/app/user.slang", "/app/user.slang", std::nullopt,
      {{"/app/user.slang", Sha256Of("float f();")}, {"/app/util.slang", Sha256Of(util_source)}});
  auto wrapper = Component::Module(
      "abc123", "sha1path", "abc123",
      std::string("// abc123\nimport \"/app/user.slang\";\nvoid compute_main() {}"),
      {{"/app/user.slang", Sha256Of("float f();")}});
  auto entry = Component::EntryPoint(wrapper, "compute_main", kFoundByName);
  auto composite = Component::Composite({wrapper, user, entry});
  return Component::Linked(composite, {});
}

TEST(RecordEncodingTest, ComponentTreesRoundTrip) {
  ComponentPtr program = SampleProgram("int k = 1;");
  absl::flat_hash_map<Digest, std::unique_ptr<capnp::MallocMessageBuilder>> records;
  std::function<void(const ComponentPtr&)> encode = [&](const ComponentPtr& node) {
    for (const ComponentPtr& child : node->children) encode(child);
    auto message = std::make_unique<capnp::MallocMessageBuilder>();
    EncodeComponent(*node, message->initRoot<trace_schema::Component>());
    records[node->digest] = std::move(message);
  };
  encode(program);
  std::function<absl::StatusOr<ComponentPtr>(const Digest&)> decode =
      [&](const Digest& digest) -> absl::StatusOr<ComponentPtr> {
    return DecodeComponent(records.at(digest)->getRoot<trace_schema::Component>().asReader(),
                           decode);
  };
  absl::StatusOr<ComponentPtr> decoded = decode(program->digest);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ((*decoded)->digest, program->digest);
  EXPECT_TRUE((*decoded)->keyable);
}

TEST(RecordEncodingTest, ProgramKeysFollowImportedFilesNotPaths) {
  EXPECT_NE(SampleProgram("int k = 1;")->digest, SampleProgram("int k = 2;")->digest);
  // The same wrapper, generated for the app installed elsewhere: slangpy names
  // it after a hash of its text, which contains the path.
  const Digest content = Sha256Of("float f();");
  const std::string name_here(64, 'a'), name_there(64, 'b');
  auto here = Component::Module(name_here, "p1", name_here,
                                "// " + name_here + "\nimport \"/app/user.slang\";",
                                {{"/app/user.slang", content}});
  auto there = Component::Module(name_there, "p2", name_there,
                                 "// " + name_there + "\nimport \"/srv/x/user.slang\";",
                                 {{"/srv/x/user.slang", content}});
  EXPECT_EQ(here->digest, there->digest);
}

TEST(RecordEncodingTest, ModulesNamedByTheAppKeepTheirNames) {
  // One module per operation, named after it: the name is code.
  auto add = Component::Module("add", "p1", "add", std::string("void main() { r = add(x, y); }"), {});
  auto mul = Component::Module("mul", "p2", "mul", std::string("void main() { r = mul(x, y); }"), {});
  EXPECT_NE(add->digest, mul->digest);
}

}  // namespace
}  // namespace spreplay
