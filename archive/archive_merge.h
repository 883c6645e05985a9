#pragma once
// Merges kernel archives compiled apart (`spreplay compile --shard K/N` on
// several machines) into one, as a single compile of the same traces would
// have written it.

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace spreplay {

struct ArchiveMergeSummary {
  size_t kernels = 0;
  size_t modules = 0;
  size_t modules_dropped = 0;  // archived by one input, refused or cut off by another
};

// Reads every archive of `inputs` (all built for one toolchain) and writes
// their union to `output`, atomically. A module one input archived and
// another refused (a kernel built with it failed there) is left out, as a
// single compile would have, and so is every module that imports it.
absl::StatusOr<ArchiveMergeSummary> MergeArchives(const std::vector<std::string>& inputs,
                                                  const std::string& output);

}  // namespace spreplay
