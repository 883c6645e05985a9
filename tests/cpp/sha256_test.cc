#include "common/sha256.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

using ::testing::HasSubstr;

// FIPS 180-2 appendix B / NIST CSRC example values.
constexpr std::string_view k448BitMessage =
    "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
constexpr std::string_view k896BitMessage =
    "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopq"
    "rsmnopqrstnopqrstu";
static_assert(k448BitMessage.size() * 8 == 448);
static_assert(k896BitMessage.size() * 8 == 896);

TEST(Sha256Test, NistVectors) {
  EXPECT_EQ(Sha256Of("").ToHex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Of("abc").ToHex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Of(k448BitMessage).ToHex(),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Of(k896BitMessage).ToHex(),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(Sha256Of(std::string(1'000'000, 'a')).ToHex(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, OneMillionAInOddSizedChunks) {
  // Chunk sizes that straddle block boundaries in every way the buffering code distinguishes.
  for (size_t chunk : {1, 3, 63, 64, 65, 1000}) {
    Sha256 hasher;
    const std::string piece(chunk, 'a');
    size_t remaining = 1'000'000;
    while (remaining > 0) {
      const size_t n = std::min(remaining, chunk);
      hasher.Update(std::string_view(piece).substr(0, n));
      remaining -= n;
    }
    EXPECT_EQ(hasher.Finish().ToHex(),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        << "chunk size " << chunk;
  }
}

TEST(Sha256Test, PaddingBoundaries) {
  // Lengths where the length field just fits, just does not fit, or fills whole blocks. Reference
  // values from Python's hashlib.
  EXPECT_EQ(Sha256Of(std::string(55, 'a')).ToHex(),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(Sha256Of(std::string(56, 'a')).ToHex(),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(Sha256Of(std::string(63, 'a')).ToHex(),
            "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34");
  EXPECT_EQ(Sha256Of(std::string(64, 'a')).ToHex(),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  EXPECT_EQ(Sha256Of(std::string(119, 'a')).ToHex(),
            "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb");
  EXPECT_EQ(Sha256Of(std::string(120, 'a')).ToHex(),
            "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c");
}

TEST(Sha256Test, IncrementalUpdatesSplitAtEveryOffset) {
  const Digest expected = Sha256Of(k896BitMessage);
  for (size_t i = 0; i <= k896BitMessage.size(); ++i) {
    for (size_t j = i; j <= k896BitMessage.size(); ++j) {
      Sha256 hasher;
      hasher.Update(k896BitMessage.substr(0, i));
      hasher.Update(k896BitMessage.substr(i, j - i));
      hasher.Update(k896BitMessage.substr(j));
      ASSERT_EQ(hasher.Finish(), expected) << "split at " << i << " and " << j;
    }
  }
}

TEST(Sha256Test, ByteSpanOverloadMatchesStringView) {
  const std::string_view text = "abc";
  Sha256 hasher;
  hasher.Update(std::as_bytes(std::span(text.data(), text.size())));
  EXPECT_EQ(hasher.Finish(), Sha256Of("abc"));
  EXPECT_EQ(Sha256Of(std::as_bytes(std::span(text.data(), text.size()))), Sha256Of("abc"));
}

TEST(Sha256Test, FinishResetsForReuse) {
  Sha256 hasher;
  hasher.Update("something else entirely");
  (void)hasher.Finish();
  hasher.Update("abc");
  EXPECT_EQ(hasher.Finish().ToHex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// The hardware rounds against the portable ones, over every state a few
// pseudo-random blocks lead to, from one block to many at a time.
TEST(Sha256Test, HardwareAndPortableCompressionAgree) {
  std::string blocks(64 * 37, '\0');
  uint32_t seed = 0x12345678;
  for (char& byte : blocks) {
    seed = seed * 1664525u + 1013904223u;
    byte = static_cast<char>(seed >> 24);
  }
  const auto* data = reinterpret_cast<const uint8_t*>(blocks.data());
  std::array<uint32_t, 8> portable = {1, 2, 3, 4, 5, 6, 7, 8};
  for (size_t count : {1, 2, 3, 31}) sha256_internal::CompressPortable(portable, data, count);
  // Python's hashlib.sha256 of the same bytes, through whichever rounds run here.
  EXPECT_EQ(Sha256Of(blocks).ToHex(),
            "1a0b0117c206470796102af85d1cb46557ef9a4ca5ed993836f291ed23c50212");
  if (!sha256_internal::HardwareSha256Available())
    GTEST_SKIP() << "no SHA extensions on this CPU; only the portable rounds were checked";
  std::array<uint32_t, 8> hardware = {1, 2, 3, 4, 5, 6, 7, 8};
  for (size_t count : {1, 2, 3, 31}) sha256_internal::CompressHardware(hardware, data, count);
  EXPECT_EQ(hardware, portable);
}

TEST(DigestTest, HexRoundTripAcceptsEitherCase) {
  const Digest digest = Sha256Of("abc");
  absl::StatusOr<Digest> parsed = Digest::FromHex(digest.ToHex());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, digest);

  absl::StatusOr<Digest> upper =
      Digest::FromHex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD");
  ASSERT_TRUE(upper.ok()) << upper.status();
  EXPECT_EQ(*upper, digest);
}

TEST(DigestTest, FromHexRejectsBadInput) {
  absl::StatusOr<Digest> too_short = Digest::FromHex("abcd");
  ASSERT_FALSE(too_short.ok());
  EXPECT_EQ(too_short.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(too_short.status().message(), HasSubstr("64 hex characters, got 4"));

  std::string bad_char = Sha256Of("abc").ToHex();
  bad_char[10] = 'g';
  absl::StatusOr<Digest> invalid = Digest::FromHex(bad_char);
  ASSERT_FALSE(invalid.ok());
  EXPECT_THAT(invalid.status().message(), HasSubstr("invalid character 'g' at position 10"));
}

TEST(DigestTest, OrdersLikeItsBytes) {
  Digest low;
  Digest high;
  high.bytes[0] = 1;
  low.bytes[31] = 0xff;
  EXPECT_LT(low, high);
  EXPECT_NE(low, high);
  EXPECT_EQ(Sha256Of("x"), Sha256Of("x"));
}

}  // namespace
}  // namespace spreplay
