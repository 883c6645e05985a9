#pragma once
// A file's whole contents, written or read in one call, for files a tool
// makes for itself or for the user (scratch inputs, reports, extracted
// binaries); not for files other processes may read while they are written.

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace spreplay {

absl::Status WriteFile(const std::string& path, std::string_view bytes);
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace spreplay
