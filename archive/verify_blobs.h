// Checks every blob of an archive against its checksum, as `spreplay inspect` does: serving
// checks each blob only when a kernel is first served, so damage can otherwise stay unseen
// until an app trips over it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "archive/archive.h"

namespace spreplay {

struct BlobDamage {
  size_t blobs_checked = 0;
  std::vector<std::string> damaged;  // one message per blob that fails its checksum
};

BlobDamage VerifyEveryBlob(const Archive& archive);

}  // namespace spreplay
