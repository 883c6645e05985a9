#include "archive/archive_format.h"

#include <cstring>
#include <fstream>

namespace spreplay {
namespace {

// Explicit byte order so archives built on one host serve on any other.
template <typename Int>
void StoreLittleEndian(Int value, std::byte* p) {
  for (size_t i = 0; i < sizeof(Int); ++i) p[i] = static_cast<std::byte>(value >> (8 * i));
}

template <typename Int>
Int LoadLittleEndian(const std::byte* p) {
  Int value = 0;
  for (size_t i = 0; i < sizeof(Int); ++i) value |= std::to_integer<Int>(p[i]) << (8 * i);
  return value;
}

// Field offsets within the header.
constexpr size_t kFormatVersionAt = 8;
constexpr size_t kHeaderSizeAt = 12;
constexpr size_t kIndexOffsetAt = 16;
constexpr size_t kIndexSizeAt = 24;
constexpr size_t kIndexCrcAt = 32;
constexpr size_t kFileSizeAt = 40;

}  // namespace

std::array<std::byte, kArchiveHeaderSize> EncodeArchiveHeader(const ArchiveHeader& header) {
  std::array<std::byte, kArchiveHeaderSize> bytes{};
  std::memcpy(bytes.data(), kArchiveMagic.data(), kArchiveMagic.size());
  StoreLittleEndian(header.format_version, bytes.data() + kFormatVersionAt);
  StoreLittleEndian(header.header_size, bytes.data() + kHeaderSizeAt);
  StoreLittleEndian(header.index_offset, bytes.data() + kIndexOffsetAt);
  StoreLittleEndian(header.index_size, bytes.data() + kIndexSizeAt);
  StoreLittleEndian(header.index_crc32c, bytes.data() + kIndexCrcAt);
  StoreLittleEndian(header.file_size, bytes.data() + kFileSizeAt);
  return bytes;
}

ArchiveHeader DecodeArchiveHeader(std::span<const std::byte> bytes) {
  const std::byte* p = bytes.data();
  return ArchiveHeader{
      .format_version = LoadLittleEndian<uint32_t>(p + kFormatVersionAt),
      .header_size = LoadLittleEndian<uint32_t>(p + kHeaderSizeAt),
      .index_offset = LoadLittleEndian<uint64_t>(p + kIndexOffsetAt),
      .index_size = LoadLittleEndian<uint64_t>(p + kIndexSizeAt),
      .index_crc32c = LoadLittleEndian<uint32_t>(p + kIndexCrcAt),
      .file_size = LoadLittleEndian<uint64_t>(p + kFileSizeAt),
  };
}

bool StartsLikeAnArchive(const std::string& path) {
  char magic[kArchiveMagic.size()] = {};
  std::ifstream(path, std::ios::binary).read(magic, sizeof magic);
  return std::string_view(magic, sizeof magic) == kArchiveMagic;
}

}  // namespace spreplay
