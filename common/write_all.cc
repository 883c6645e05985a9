#include "common/write_all.h"

#include <unistd.h>

#include <cerrno>

#include "fmt/format.h"

namespace spreplay {

absl::Status WriteAll(int fd, std::span<const std::byte> bytes, std::string_view what) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(errno, fmt::format("cannot write {}", what));
    }
    if (n == 0) return absl::DataLossError(fmt::format("write to {} made no progress", what));
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

}  // namespace spreplay
