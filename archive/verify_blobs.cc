#include "archive/verify_blobs.h"

#include "fmt/format.h"

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
  const size_t modules = archive.index().getModules().size();
  for (size_t position = 0; position < modules; ++position) {
    ++result.modules_checked;
    absl::StatusOr<std::span<const std::byte>> ir = archive.ModuleIr(position);
    if (!ir.ok()) result.damaged.emplace_back(ir.status().message());
  }
  return result;
}

std::string DamageSummary(const BlobDamage& damage, const std::string& path) {
  return fmt::format(
      "{} of {} blobs ({} kernel images, {} module IR) in {} are damaged; rebuild it with "
      "`spreplay compile`",
      damage.damaged.size(), damage.blobs_checked + damage.modules_checked, damage.blobs_checked,
      damage.modules_checked, path);
}

}  // namespace spreplay
