// The bytes of an archive, held at one 256-byte aligned address for as long as they are in use:
// the reader hands out views into them (blobs, the index), so they must neither move nor change.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace spreplay {

class ArchiveBytes {
 public:
  // Maps the whole file read-only. Pages are read on first touch, so mapping a large archive is
  // cheap. An empty file gives empty bytes. Nobody may truncate the file while it is mapped
  // (touching a page past the new end raises SIGBUS); archives are published by rename and never
  // rewritten in place, so this holds for them.
  static absl::StatusOr<ArchiveBytes> MapFile(const std::string& path);

  // Copies `bytes` to aligned heap memory. Heap rather than an anonymous mapping so that under
  // AddressSanitizer (the fuzzers) a read even one byte past the end is reported, where a
  // mapping would let it land silently in the rest of the last page.
  static ArchiveBytes CopyOf(std::span<const std::byte> bytes);

  ArchiveBytes(ArchiveBytes&& other) noexcept;
  ArchiveBytes& operator=(ArchiveBytes&&) = delete;
  ArchiveBytes(const ArchiveBytes&) = delete;
  ArchiveBytes& operator=(const ArchiveBytes&) = delete;
  ~ArchiveBytes();

  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  enum class Owner { kNothing, kMapping, kHeap };
  ArchiveBytes(const std::byte* data, size_t size, Owner owner)
      : data_(data), size_(size), owner_(owner) {}

  const std::byte* data_;
  size_t size_;
  Owner owner_;
};

}  // namespace spreplay
