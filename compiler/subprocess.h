#pragma once
// Runs a program to completion and captures what it printed.

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace spreplay {

struct ProcessResult {
  int exit_code = 0;
  std::string output;  // stdout and stderr, interleaved
};

absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv);

}  // namespace spreplay
