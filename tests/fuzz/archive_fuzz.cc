// Feeds arbitrary bytes to the archive reader as the runtime would use it: open, look every kernel
// up by its key, serve every blob and every module's IR, and describe the archive for `inspect`.
// Any crash, sanitizer report or broken invariant is a bug: the reader promises to survive every
// input.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "archive/archive.h"
#include "archive/archive_format.h"
#include "archive/describe_archive.h"
#include "common/crc32c.h"

namespace spreplay {
namespace {

void Exercise(std::span<const std::byte> input) {
  absl::StatusOr<Archive> archive = Archive::Open(input, "fuzz input");
  if (!archive.ok()) return;
  const std::span<const std::byte> file = archive->bytes();
  for (size_t position = 0; position < archive->kernel_count(); ++position) {
    const ArchivedKernel kernel = archive->kernel(position);
    Digest key;
    std::memcpy(key.bytes.data(), kernel.entry.getKey().begin(), key.bytes.size());
    // Keys are unique and sorted once validated, so the search must land on this very entry.
    const std::optional<ArchivedKernel> found = archive->Find(key);
    if (!found.has_value() || found->position != position) __builtin_trap();
    for (const auto blob : kernel.entry.getBlobs()) {
      absl::StatusOr<std::span<const std::byte>> bytes =
          archive->Blob(kernel, blob.getKind(), blob.getArch());
      if (!bytes.ok()) continue;
      if (bytes->data() < file.data() ||
          bytes->data() + bytes->size() > file.data() + file.size()) {
        __builtin_trap();
      }
      // Reads every byte, so AddressSanitizer checks the whole view.
      (void)Crc32c(*bytes);
    }
  }
  for (size_t position = 0; position < archive->index().getModules().size(); ++position) {
    absl::StatusOr<std::span<const std::byte>> ir = archive->ModuleIr(position);
    if (!ir.ok()) continue;
    if (ir->data() < file.data() || ir->data() + ir->size() > file.data() + file.size())
      __builtin_trap();
    (void)Crc32c(*ir);
  }
  (void)DescribeArchive(*archive, /*json=*/false);
  (void)DescribeArchive(*archive, /*json=*/true);
}

// Makes the header's size and index checksum agree with the input, so that mutated indexes reach
// the Cap'n Proto parser and the validator instead of all stopping at the checksum.
std::vector<std::byte> WithConsistentHeader(std::span<const std::byte> input) {
  std::vector<std::byte> repaired(input.begin(), input.end());
  ArchiveHeader header = DecodeArchiveHeader(repaired);
  header.file_size = repaired.size();
  if (header.index_offset <= repaired.size() &&
      header.index_size <= repaired.size() - header.index_offset) {
    header.index_crc32c =
        Crc32c(std::span(repaired).subspan(header.index_offset, header.index_size));
  }
  const auto encoded = EncodeArchiveHeader(header);
  std::memcpy(repaired.data(), encoded.data(), encoded.size());
  return repaired;
}

}  // namespace
}  // namespace spreplay

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto input = std::as_bytes(std::span(data, size));
  spreplay::Exercise(input);
  if (size >= spreplay::kArchiveHeaderSize) {
    spreplay::Exercise(spreplay::WithConsistentHeader(input));
  }
  return 0;
}
