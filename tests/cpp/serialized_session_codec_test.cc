// A SerializedSession crosses between a compile's worker processes whole:
// module descriptions (checked against their digests), IR with any bytes,
// each program's uses or why it has none, its layout and its codes; and
// damaged bytes are an error, never a session.

#include "compiler/serialized_session_codec.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

SerializedSession ASession() {
  SerializedSession session;
  SerializedModule& library = session.modules.emplace_back();
  library.description = Component::Module("slangpy", "/lib/slangpy.slang", "slangpy", std::nullopt,
                                          {{"/lib/slangpy.slang", Sha256Of("library")}});
  library.ir = std::string("IR\0with\0nuls", 12);
  SerializedModule& text = session.modules.emplace_back();
  text.description = Component::Module("call_site", "call_site.slang", "", "import slangpy;",
                                       {{"/lib/slangpy.slang", Sha256Of("library")}});
  text.ir = "wrapper IR";
  text.imports = {0};
  text.source_only = "it imports a cycle";
  SerializedModule& unknown = session.modules.emplace_back();
  unknown.description = Component::Opaque("undescribable");
  session.uses.emplace_back(std::vector<size_t>{0, 1});
  session.uses.emplace_back(absl::FailedPreconditionError("its module is not serializable"));
  session.layouts = {"{\"parameters\": []}", ""};
  session.entry_point_codes = {{}, {".entry a", std::string(".entry\0b", 8)}};
  return session;
}

TEST(SerializedSessionCodecTest, RoundTripsEveryField) {
  const SerializedSession sent = ASession();
  absl::StatusOr<SerializedSession> received =
      DecodeSerializedSession(EncodeSerializedSession(sent));
  ASSERT_TRUE(received.ok()) << received.status();
  ASSERT_EQ(received->modules.size(), 3u);
  for (size_t i = 0; i < 2; ++i) {
    const SerializedModule& module = received->modules[i];
    EXPECT_EQ(module.description->digest, sent.modules[i].description->digest);
    EXPECT_EQ(module.description->name, sent.modules[i].description->name);
    EXPECT_EQ(module.description->path, sent.modules[i].description->path);
    EXPECT_EQ(module.description->source, sent.modules[i].description->source);
    EXPECT_EQ(module.ir, sent.modules[i].ir);
    EXPECT_EQ(module.imports, sent.modules[i].imports);
    EXPECT_EQ(module.source_only, sent.modules[i].source_only);
  }
  EXPECT_EQ(received->modules[2].description->kind, Component::Kind::kOpaque);
  ASSERT_EQ(received->uses.size(), 2u);
  ASSERT_TRUE(received->uses[0].ok());
  EXPECT_THAT(*received->uses[0], ElementsAre(0u, 1u));
  EXPECT_EQ(received->uses[1].status(), sent.uses[1].status());
  EXPECT_EQ(received->layouts, sent.layouts);
  EXPECT_EQ(received->entry_point_codes, sent.entry_point_codes);
}

TEST(SerializedSessionCodecTest, DamagedBytesAreAnError) {
  const std::string bytes = EncodeSerializedSession(ASession());
  // Cut at a word: Cap'n Proto's own checks find it.
  EXPECT_FALSE(DecodeSerializedSession(bytes.substr(0, bytes.size() / 2 / 8 * 8)).ok());
  EXPECT_THAT(DecodeSerializedSession(bytes.substr(0, bytes.size() - 3)).status().message(),
              HasSubstr("whole words"));
  // A description whose digest is not its content's.
  SerializedSession session = ASession();
  auto forged = std::make_shared<Component>(*session.modules[0].description);
  forged->name = "not slangpy";
  session.modules[0].description = forged;
  EXPECT_THAT(DecodeSerializedSession(EncodeSerializedSession(session)).status().message(),
              HasSubstr("does not hash to its digest"));
}

TEST(SerializedSessionCodecTest, AProgramMayNotUseAModuleTheSessionLacks) {
  SerializedSession session = ASession();
  session.uses[0] = std::vector<size_t>{0, 7};
  EXPECT_FALSE(DecodeSerializedSession(EncodeSerializedSession(session)).ok());
}

TEST(SerializedSessionCodecTest, AModuleMayOnlyImportOnesLoadedBeforeIt) {
  SerializedSession session = ASession();
  session.modules[0].imports = {1};
  EXPECT_THAT(DecodeSerializedSession(EncodeSerializedSession(session)).status().message(),
              HasSubstr("loaded after it"));
}

}  // namespace
}  // namespace spreplay
