#include "common/crc32c.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace spreplay {
namespace {

std::span<const std::byte> AsBytes(const std::vector<uint8_t>& data) {
  return std::as_bytes(std::span(data));
}

TEST(Crc32cTest, CheckValue) { EXPECT_EQ(Crc32c("123456789"), 0xE3069283u); }

TEST(Crc32cTest, Rfc3720Vectors) {
  std::vector<uint8_t> zeros(32, 0x00);
  std::vector<uint8_t> ones(32, 0xff);
  std::vector<uint8_t> ascending(32);
  std::vector<uint8_t> descending(32);
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<uint8_t>(i);
    descending[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(Crc32c(AsBytes(zeros)), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(AsBytes(ones)), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(AsBytes(ascending)), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(AsBytes(descending)), 0x113FDB5Cu);
}

TEST(Crc32cTest, EmptyInputKeepsSeed) {
  EXPECT_EQ(Crc32c(std::span<const std::byte>()), 0u);
  EXPECT_EQ(Crc32c(std::span<const std::byte>(), 0x12345678), 0x12345678u);
}

TEST(Crc32cTest, ChainsAcrossEverySplit) {
  std::vector<uint8_t> data(100);
  std::mt19937 rng(1);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  const auto all = AsBytes(data);
  const uint32_t whole = Crc32c(all);
  for (size_t split = 0; split <= all.size(); ++split) {
    EXPECT_EQ(Crc32c(all.subspan(split), Crc32c(all.first(split))), whole) << "split " << split;
  }
}

TEST(Crc32cTest, PortableAndHardwareAgree) {
  std::vector<uint8_t> data(4096 + 8);
  std::mt19937 rng(2);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  const auto all = AsBytes(data);
  // Every length through a few words, at every misalignment, then some long buffers.
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t length = 0; length <= 80; ++length) {
      const auto piece = all.subspan(offset, length);
      EXPECT_EQ(crc32c_internal::Crc32cPortable(piece, 0), Crc32c(piece));
      if (crc32c_internal::HardwareCrc32cAvailable()) {
        EXPECT_EQ(crc32c_internal::Crc32cHardware(piece, 0x5eed),
                  crc32c_internal::Crc32cPortable(piece, 0x5eed));
      }
    }
  }
  EXPECT_EQ(crc32c_internal::Crc32cPortable(all.subspan(3, 4096), 0), Crc32c(all.subspan(3, 4096)));
  if (!crc32c_internal::HardwareCrc32cAvailable()) {
    GTEST_SKIP() << "no hardware CRC-32C on this CPU; only the portable path was checked";
  }
}

}  // namespace
}  // namespace spreplay
