// Serves kernels from a spreplay kernel archive (layout in archive/archive_format.h, index in
// schema/archive.capnp) without copying: the file is memory-mapped, the index is read in place,
// and blob bytes are handed out as views of the mapping, ready for cuModuleLoadData.
//
// Opening validates everything lookups rely on, so no input file can make the reader crash or
// read out of bounds; each blob's checksum is verified the first time it is served.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "archive/archive_format.h"
#include "common/sha256.h"
#include "schema/archive.capnp.h"

namespace spreplay {

class ArchiveBytes;

// One kernel of an open archive: a view into its index, valid while the Archive lives.
struct ArchivedKernel {
  size_t position = 0;  // In key order, 0 .. kernel_count() - 1.
  schema::KernelEntry::Reader entry;
};

// Immutable after Open and safe to use from any number of threads.
class Archive {
 public:
  // Maps and validates the archive at `path`. Errors say which file is wrong, how, and what to do
  // about it: NotFound if it is missing; InvalidArgument if it is not an archive at all;
  // FailedPrecondition if a newer spreplay wrote it; DataLoss if it is empty, truncated or
  // damaged.
  static absl::StatusOr<Archive> Open(const std::string& path);

  // As above, for archive bytes already in memory (tests, fuzzing). The bytes are copied, so the
  // caller's buffer needs no particular alignment or lifetime. `source_name` names it in errors.
  static absl::StatusOr<Archive> Open(std::span<const std::byte> bytes,
                                      std::string_view source_name);

  Archive(Archive&&) noexcept;
  Archive& operator=(Archive&&) noexcept;
  ~Archive();

  // Binary search over the sorted index: O(log n), no allocation, no per-open table.
  std::optional<ArchivedKernel> Find(const Digest& key) const;

  size_t kernel_count() const;
  // `position` must be below kernel_count().
  ArchivedKernel kernel(size_t position) const;

  // The bytes of `kernel`'s blob of `kind` for `arch` (0 for the fatbin), as a view of the
  // mapping. The first use of each blob verifies its CRC-32C; a mismatch is a DataLoss error
  // naming the kernel and the archive, and every later use reports it again without rereading.
  // NotFound if the kernel has no such blob.
  absl::StatusOr<std::span<const std::byte>> Blob(const ArchivedKernel& kernel,
                                                  schema::BlobKind kind, uint32_t arch = 0) const;

  // The serialized IR of module entry `position` of index().getModules(), as a view of the
  // mapping; its CRC-32C is verified on first use, as for kernel blobs.
  absl::StatusOr<std::span<const std::byte>> ModuleIr(size_t position) const;

  const ArchiveHeader& header() const;
  schema::ArchiveIndex::Reader index() const;
  // The whole file as mapped.
  std::span<const std::byte> bytes() const;
  const std::string& source_name() const;

 private:
  struct Contents;
  explicit Archive(std::unique_ptr<Contents> contents);
  static absl::StatusOr<Archive> FromBytes(ArchiveBytes bytes, std::string source_name);

  // Behind a pointer because the index reader must not move while views into it exist.
  std::unique_ptr<Contents> contents_;
};

}  // namespace spreplay
