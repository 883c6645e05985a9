// The fixed binary layout of a spreplay kernel archive, shared by its writer and reader.
//
// An archive is made to be memory-mapped at Python import time and served without copying:
//
//   offset 0     header, 64 bytes, little-endian:
//                  "SPRARCH\0" | u32 format version | u32 header size | u64 index offset
//                  | u64 index size | u32 crc32c(index bytes) | u32 reserved
//                  | u64 total file size | 16 reserved bytes
//   then         blobs (fatbins, PTX, cubins), each starting at a multiple of 256 bytes so the
//                driver can read the mapped bytes in place, zero padding between them
//   then         the index: one unpacked Cap'n Proto message in flat-array form (segment table
//                first), 8-byte aligned, schema/archive.capnp's ArchiveIndex
//
// The header comes first so a reader learns everything from one small read; the index comes last
// so the writer can stream blobs before it knows every offset. The recorded total size lets the
// reader tell a truncated copy from a complete one before trusting any offset.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace spreplay {

inline constexpr std::string_view kArchiveMagic{"SPRARCH\0", 8};
// 2: kernels and modules under the keys of trace format 2. Older archives
// hold other keys and are refused.
inline constexpr uint32_t kArchiveFormatVersion = 2;
inline constexpr size_t kArchiveHeaderSize = 64;
inline constexpr uint64_t kArchiveBlobAlignment = 256;
// Cap'n Proto words are 8 bytes; the index is read in place, so it must start on one.
inline constexpr uint64_t kArchiveIndexAlignment = 8;

struct ArchiveHeader {
  uint32_t format_version = kArchiveFormatVersion;
  uint32_t header_size = kArchiveHeaderSize;
  uint64_t index_offset = 0;
  uint64_t index_size = 0;
  uint32_t index_crc32c = 0;
  uint64_t file_size = 0;
};

// Reserved bytes are written as zero.
std::array<std::byte, kArchiveHeaderSize> EncodeArchiveHeader(const ArchiveHeader& header);

// Reads the fields as stored, checking nothing but the length; the reader validates them.
// `bytes` must hold at least kArchiveHeaderSize bytes.
ArchiveHeader DecodeArchiveHeader(std::span<const std::byte> bytes);

constexpr uint64_t AlignUpTo(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Whether the file at `path` begins with kArchiveMagic: archives and traces
// announce themselves in their first bytes.
bool StartsLikeAnArchive(const std::string& path);

}  // namespace spreplay
