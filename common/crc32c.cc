#include "common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace spreplay {
namespace crc32c_internal {
namespace {

constexpr uint32_t kReflectedPolynomial = 0x82F63B78;

using SlicingTables = std::array<std::array<uint32_t, 256>, 8>;

// Slicing-by-8: tables[k][b] is the CRC contribution of byte b followed by k zero bytes, which
// lets the loop fold eight input bytes per step with independent table lookups.
constexpr SlicingTables MakeSlicingTables() {
  SlicingTables tables{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 1) ? (crc >> 1) ^ kReflectedPolynomial : crc >> 1;
    }
    tables[0][byte] = crc;
  }
  for (size_t k = 1; k < tables.size(); ++k) {
    for (uint32_t byte = 0; byte < 256; ++byte) {
      const uint32_t previous = tables[k - 1][byte];
      tables[k][byte] = (previous >> 8) ^ tables[0][previous & 0xff];
    }
  }
  return tables;
}

constexpr SlicingTables kTables = MakeSlicingTables();

// The CRC is defined over a little-endian byte stream; assembling the word explicitly keeps the
// table path correct on big-endian hosts too.
uint32_t LoadLittleEndian32(const unsigned char* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

}  // namespace

uint32_t Crc32cPortable(std::span<const std::byte> data, uint32_t seed) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t size = data.size();
  uint32_t crc = ~seed;
  while (size >= 8) {
    const uint32_t low = LoadLittleEndian32(p) ^ crc;
    const uint32_t high = LoadLittleEndian32(p + 4);
    crc = kTables[7][low & 0xff] ^ kTables[6][(low >> 8) & 0xff] ^ kTables[5][(low >> 16) & 0xff] ^
          kTables[4][low >> 24] ^ kTables[3][high & 0xff] ^ kTables[2][(high >> 8) & 0xff] ^
          kTables[1][(high >> 16) & 0xff] ^ kTables[0][high >> 24];
    p += 8;
    size -= 8;
  }
  while (size > 0) {
    crc = (crc >> 8) ^ kTables[0][(crc ^ *p) & 0xff];
    ++p;
    --size;
  }
  return ~crc;
}

#if defined(__x86_64__)

bool HardwareCrc32cAvailable() {
  // Probed once; the answer cannot change while the process runs.
  static const bool available = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") != 0;
  }();
  return available;
}

__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(std::span<const std::byte> data,
                                                          uint32_t seed) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t size = data.size();
  uint64_t crc = ~seed;
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof(word));  // x86 is little-endian, as the CRC expects.
    crc = _mm_crc32_u64(crc, word);
    p += 8;
    size -= 8;
  }
  auto crc32 = static_cast<uint32_t>(crc);
  while (size > 0) {
    crc32 = _mm_crc32_u8(crc32, *p);
    ++p;
    --size;
  }
  return ~crc32;
}

#else

bool HardwareCrc32cAvailable() { return false; }

uint32_t Crc32cHardware(std::span<const std::byte> data, uint32_t seed) {
  return Crc32cPortable(data, seed);
}

#endif

}  // namespace crc32c_internal

uint32_t Crc32c(std::span<const std::byte> data, uint32_t seed) {
  if (crc32c_internal::HardwareCrc32cAvailable()) {
    return crc32c_internal::Crc32cHardware(data, seed);
  }
  return crc32c_internal::Crc32cPortable(data, seed);
}

}  // namespace spreplay
