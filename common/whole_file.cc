#include "common/whole_file.h"

#include <fstream>
#include <sstream>

#include "fmt/format.h"

namespace spreplay {

absl::Status WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) return absl::InternalError(fmt::format("cannot write {}", path));
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(fmt::format("cannot read {}", path));
  std::ostringstream buffer;
  buffer << file.rdbuf();
  return std::move(buffer).str();
}

}  // namespace spreplay
