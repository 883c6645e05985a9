#include "archive/verify_blobs.h"

namespace spreplay {

BlobDamage VerifyEveryBlob(const Archive& archive) {
  BlobDamage result;
  for (size_t position = 0; position < archive.kernel_count(); ++position) {
    const ArchivedKernel kernel = archive.kernel(position);
    for (const auto blob : kernel.entry.getBlobs()) {
      ++result.blobs_checked;
      absl::StatusOr<std::span<const std::byte>> bytes =
          archive.Blob(kernel, blob.getKind(), blob.getArch());
      if (!bytes.ok()) result.damaged.emplace_back(bytes.status().message());
    }
  }
  return result;
}

}  // namespace spreplay
