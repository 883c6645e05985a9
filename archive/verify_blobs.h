// Checks every blob of an archive against its checksum, kernels' images and
// modules' IR alike, as `spreplay inspect` and `spreplay verify` do: serving
// checks each blob only when it is first used, so damage can otherwise stay
// unseen until an app trips over it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "archive/archive.h"

namespace spreplay {

struct BlobDamage {
  size_t blobs_checked = 0;          // kernel images (fatbin, PTX)
  size_t modules_checked = 0;        // module IR
  std::vector<std::string> damaged;  // one message per blob that fails its checksum
};

BlobDamage VerifyEveryBlob(const Archive& archive);

// "N of M blobs (kernel images and module IR) in PATH are damaged; ...", for
// the last line of a command that found damage.
std::string DamageSummary(const BlobDamage& damage, const std::string& path);

}  // namespace spreplay
