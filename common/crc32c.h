// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum guarding trace frames.
// Chosen over CRC-32 because x86 computes it in hardware, so checksumming every record costs
// little next to the write itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace spreplay {

// `seed` is the result of a previous call, so a checksum can be built piecewise:
// Crc32c(b, Crc32c(a)) == Crc32c(a followed by b). The default seed gives the standard value,
// e.g. Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(std::span<const std::byte> data, uint32_t seed = 0);

inline uint32_t Crc32c(std::string_view data, uint32_t seed = 0) {
  return Crc32c(std::as_bytes(std::span(data.data(), data.size())), seed);
}

// The individual implementations, exposed so tests can check them against each other.
namespace crc32c_internal {

uint32_t Crc32cPortable(std::span<const std::byte> data, uint32_t seed);
bool HardwareCrc32cAvailable();
// Only call when HardwareCrc32cAvailable() is true.
uint32_t Crc32cHardware(std::span<const std::byte> data, uint32_t seed);

}  // namespace crc32c_internal
}  // namespace spreplay
