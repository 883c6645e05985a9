#pragma once
// A Slang job's outcome as a child process sends it to its parent
// (ParallelForInChildren): the code Slang generated, or why there is none,
// and the seconds its phases took.

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace spreplay {

struct CodeFromChild {
  absl::StatusOr<std::string> code;
  std::vector<double> seconds;  // as many as the child sent
};

std::string EncodeCodeFromChild(const absl::StatusOr<std::string>& code,
                                const std::vector<double>& seconds);

// What in_child() returned: the child's outcome, or why the child gave none.
CodeFromChild DecodeCodeFromChild(absl::StatusOr<std::string> bytes);

}  // namespace spreplay
