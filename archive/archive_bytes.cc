#include "archive/archive_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "archive/archive_format.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

// Blob offsets are multiples of this, so a base aligned to it keeps every blob aligned in memory.
constexpr std::align_val_t kCopyAlignment{kArchiveBlobAlignment};

}  // namespace

absl::StatusOr<ArchiveBytes> ArchiveBytes::MapFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(fmt::format(
          "kernel archive {} does not exist; check the path or build it with `spreplay compile`",
          path));
    }
    return absl::ErrnoToStatus(error, fmt::format("cannot open kernel archive {}", path));
  }
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    return absl::ErrnoToStatus(error, fmt::format("cannot stat kernel archive {}", path));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        fmt::format("{} is not a regular file, so not a kernel archive; pass the path of the "
                    "archive file `spreplay compile` wrote",
                    path));
  }
  const size_t size = static_cast<size_t>(info.st_size);
  if (size == 0) {
    ::close(fd);
    return ArchiveBytes(nullptr, 0, Owner::kNothing);
  }
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int error = errno;
  // The mapping keeps the file's contents reachable; the descriptor is no longer needed.
  ::close(fd);
  if (data == MAP_FAILED) {
    return absl::ErrnoToStatus(error, fmt::format("cannot map kernel archive {}", path));
  }
  return ArchiveBytes(static_cast<const std::byte*>(data), size, Owner::kMapping);
}

ArchiveBytes ArchiveBytes::CopyOf(std::span<const std::byte> bytes) {
  if (bytes.empty()) return ArchiveBytes(nullptr, 0, Owner::kNothing);
  auto* data = static_cast<std::byte*>(::operator new(bytes.size(), kCopyAlignment));
  std::memcpy(data, bytes.data(), bytes.size());
  return ArchiveBytes(data, bytes.size(), Owner::kHeap);
}

ArchiveBytes::ArchiveBytes(ArchiveBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      owner_(std::exchange(other.owner_, Owner::kNothing)) {}

ArchiveBytes::~ArchiveBytes() {
  switch (owner_) {
    case Owner::kMapping:
      ::munmap(const_cast<std::byte*>(data_), size_);
      break;
    case Owner::kHeap:
      ::operator delete(const_cast<std::byte*>(data_), kCopyAlignment);
      break;
    case Owner::kNothing:
      break;
  }
}

}  // namespace spreplay
