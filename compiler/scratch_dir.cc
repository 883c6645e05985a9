#include "compiler/scratch_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "fmt/format.h"

namespace spreplay {

absl::StatusOr<ScratchDir> ScratchDir::Create(const std::string& prefix) {
  std::error_code error;
  std::filesystem::path base = std::filesystem::temp_directory_path(error);
  if (error) base = "/tmp";
  std::string pattern = (base / (prefix + "XXXXXX")).string();
  if (!mkdtemp(pattern.data()))
    return absl::InternalError(
        fmt::format("cannot create a temporary directory: {}", std::strerror(errno)));
  return ScratchDir(pattern);
}

ScratchDir::~ScratchDir() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace spreplay
