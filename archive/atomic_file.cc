#include "archive/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <filesystem>
#include <random>
#include <utility>

#include "common/fmt_absl.h"
#include "common/write_all.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

constexpr int kCreateAttempts = 8;

// pid separates processes; the random part separates threads of one process and a pid reused
// after a crash left its temporary file behind.
std::string TempPathFor(const std::filesystem::path& destination) {
  std::random_device random;
  const uint64_t nonce = (uint64_t{random()} << 32) | random();
  const std::string name =
      fmt::format(".{}.tmp-{}-{:016x}", destination.filename().string(), ::getpid(), nonce);
  return (destination.parent_path() / name).string();
}

std::string DirectoryOf(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

absl::Status SyncDirectory(const std::string& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno,
                               fmt::format("cannot open directory {} to sync it", directory));
  }
  int result;
  do {
    result = ::fsync(fd);
  } while (result != 0 && errno == EINTR);
  const int error = errno;
  ::close(fd);
  // Some filesystems cannot sync directories at all; there is nothing better to do there.
  if (result != 0 && error != EINVAL && error != ENOTSUP) {
    return absl::ErrnoToStatus(error, fmt::format("cannot sync directory {}", directory));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<AtomicFileWriter> AtomicFileWriter::Create(std::string destination_path) {
  if (destination_path.empty() || std::filesystem::path(destination_path).filename().empty()) {
    return absl::InvalidArgumentError(
        fmt::format("cannot write \"{}\": not a file path", destination_path));
  }
  for (int attempt = 0; attempt < kCreateAttempts; ++attempt) {
    std::string temp_path = TempPathFor(destination_path);
    // O_EXCL: never adopt a file someone else is writing. 0644 rather than mkstemp's 0600 so the
    // published file is as readable as any other file its owner creates.
    const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      return AtomicFileWriter(fd, std::move(destination_path), std::move(temp_path));
    }
    if (errno != EEXIST) {
      return absl::ErrnoToStatus(errno,
                                 fmt::format("cannot create a temporary file in {} to write {}",
                                             DirectoryOf(destination_path), destination_path));
    }
  }
  return absl::AlreadyExistsError(fmt::format(
      "cannot create a temporary file to write {}: every name tried exists", destination_path));
}

AtomicFileWriter::AtomicFileWriter(int fd, std::string destination_path, std::string temp_path)
    : fd_(fd), destination_path_(std::move(destination_path)), temp_path_(std::move(temp_path)) {}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      destination_path_(std::move(other.destination_path_)),
      temp_path_(std::exchange(other.temp_path_, {})) {}

AtomicFileWriter::~AtomicFileWriter() { Abandon(); }

void AtomicFileWriter::Abandon() {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  if (!temp_path_.empty()) ::unlink(std::exchange(temp_path_, {}).c_str());
}

absl::Status AtomicFileWriter::Write(std::span<const std::byte> bytes) {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        fmt::format("write to {} after it was committed or abandoned", destination_path_));
  }
  return WriteAll(fd_, bytes, temp_path_);
}

absl::Status AtomicFileWriter::WriteZeros(size_t count) {
  static constexpr std::array<std::byte, 4096> kZeros{};
  while (count > 0) {
    const size_t chunk = std::min(count, kZeros.size());
    if (absl::Status status = Write(std::span(kZeros).first(chunk)); !status.ok()) return status;
    count -= chunk;
  }
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Commit() {
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        fmt::format("{} was already committed or abandoned", destination_path_));
  }
  absl::Status status = absl::OkStatus();
  // Data first, name second: otherwise a crash right after the rename could publish a file whose
  // blocks never reached the disk.
  while (::fsync(fd_) != 0) {
    if (errno == EINTR) continue;
    status = absl::ErrnoToStatus(errno, fmt::format("cannot sync {}", temp_path_));
    break;
  }
  // close() can report a deferred write error (e.g. on NFS), so it is checked too.
  if (::close(std::exchange(fd_, -1)) != 0 && status.ok()) {
    status = absl::ErrnoToStatus(errno, fmt::format("cannot close {}", temp_path_));
  }
  if (status.ok() && ::rename(temp_path_.c_str(), destination_path_.c_str()) != 0) {
    status = absl::ErrnoToStatus(
        errno, fmt::format("cannot rename {} to {}", temp_path_, destination_path_));
  }
  if (!status.ok()) {
    Abandon();
    return status;
  }
  temp_path_.clear();
  // The rename lives in the directory; syncing it makes the publication itself survive a crash.
  return SyncDirectory(DirectoryOf(destination_path_));
}

}  // namespace spreplay
