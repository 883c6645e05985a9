#pragma once
// `spreplay merge`: many traces (processes, ranks, machines) into one, with
// repeated records dropped. The output appears atomically, complete or not at
// all; damaged regions of the inputs are skipped and reported.

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace spreplay {

struct MergeSummary {
  uint64_t records_read = 0;
  uint64_t records_written = 0;
  uint64_t damaged_regions = 0;
};

absl::StatusOr<MergeSummary> MergeTraces(const std::vector<std::string>& inputs,
                                         const std::string& output);

}  // namespace spreplay
