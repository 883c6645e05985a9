#include "recorder/trace_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <utility>

#include "common/crc32c.h"
#include "common/leading_bytes.h"
#include "common/write_all.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

// ---------------------------------------------------------------------------------------------
// Encoding shared by writer and reader.

constexpr size_t kFrameChecksummedHeaderBytes = 12;  // Everything before the header's own CRC.

constexpr uint64_t AlignUp(uint64_t n) {
  return (n + kTraceFrameAlignment - 1) & ~uint64_t{kTraceFrameAlignment - 1};
}

// Explicit byte order so traces move between hosts unchanged.
void StoreLittleEndian32(uint32_t value, std::byte* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>(value >> (8 * i));
}

uint32_t LoadLittleEndian32(const std::byte* p) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= std::to_integer<uint32_t>(p[i]) << (8 * i);
  return value;
}

std::array<std::byte, kTraceFileHeaderSize> EncodeFileHeader() {
  std::array<std::byte, kTraceFileHeaderSize> header{};
  std::memcpy(header.data(), kTraceFileMagic.data(), kTraceFileMagic.size());
  StoreLittleEndian32(kTraceFormatVersion, header.data() + 8);
  return header;
}

std::vector<std::byte> EncodeFrame(std::span<const std::byte> payload) {
  // Value-initialised, so the alignment padding is already zero.
  std::vector<std::byte> frame(AlignUp(kTraceFrameHeaderSize + payload.size()));
  std::byte* header = frame.data();
  StoreLittleEndian32(kTraceFrameMagic, header);
  StoreLittleEndian32(static_cast<uint32_t>(payload.size()), header + 4);
  StoreLittleEndian32(Crc32c(payload), header + 8);
  StoreLittleEndian32(Crc32c(std::span(header, kFrameChecksummedHeaderBytes)), header + 12);
  if (!payload.empty()) {
    std::memcpy(header + kTraceFrameHeaderSize, payload.data(), payload.size());
  }
  return frame;
}

bool StartsLikeTrace(std::span<const std::byte> bytes) {
  const size_t n = std::min(bytes.size(), kTraceFileMagic.size());
  return std::memcmp(bytes.data(), kTraceFileMagic.data(), n) == 0;
}

// Checks a complete 16-byte file header and returns its format version.
absl::StatusOr<uint32_t> CheckFileHeader(std::span<const std::byte> header,
                                         std::string_view source_name) {
  if (!StartsLikeTrace(header)) {
    return absl::InvalidArgumentError(
        fmt::format("{} is not a spreplay trace (starts with {})", source_name,
                    DescribeLeadingBytes(header, kTraceFileMagic.size())));
  }
  const uint32_t version = LoadLittleEndian32(header.data() + 8);
  if (version == 0) {
    return absl::DataLossError(fmt::format(
        "{} has a damaged header: it claims trace format 0, which never existed", source_name));
  }
  if (version > kTraceFormatVersion) {
    return absl::FailedPreconditionError(fmt::format(
        "{} was written by a newer spreplay: trace format {}, this build reads up to {}",
        source_name, version, kTraceFormatVersion));
  }
  if (version < kTraceFormatVersion) {
    return absl::FailedPreconditionError(fmt::format(
        "{} was recorded by an older spreplay (trace format {}), whose keys this build (format "
        "{}) does not use: record it again with this one",
        source_name, version, kTraceFormatVersion));
  }
  return version;
}

// ---------------------------------------------------------------------------------------------
// Reading.

enum class FrameVerdict {
  kIntact,
  kPartialHeader,
  kNoFrameMarker,
  kHeaderChecksumMismatch,
  kRunsPastEnd,
  kPayloadChecksumMismatch,
};

struct FrameProbe {
  FrameVerdict verdict;
  uint32_t payload_length = 0;  // Only meaningful once the header checksum has verified.
};

// Judges the bytes at `offset` as a frame. The length field is trusted only after the header CRC
// vouches for it, and even then only to bound a range inside `file`.
FrameProbe ProbeFrame(std::span<const std::byte> file, uint64_t offset) {
  if (file.size() - offset < kTraceFrameHeaderSize) return {FrameVerdict::kPartialHeader};
  const std::byte* header = file.data() + offset;
  if (LoadLittleEndian32(header) != kTraceFrameMagic) return {FrameVerdict::kNoFrameMarker};
  if (LoadLittleEndian32(header + 12) != Crc32c(std::span(header, kFrameChecksummedHeaderBytes))) {
    return {FrameVerdict::kHeaderChecksumMismatch};
  }
  const uint32_t length = LoadLittleEndian32(header + 4);
  if (length > file.size() - offset - kTraceFrameHeaderSize) {
    return {FrameVerdict::kRunsPastEnd, length};
  }
  if (LoadLittleEndian32(header + 8) !=
      Crc32c(file.subspan(offset + kTraceFrameHeaderSize, length))) {
    return {FrameVerdict::kPayloadChecksumMismatch, length};
  }
  return {FrameVerdict::kIntact, length};
}

// Writers only ever start frames at aligned offsets (they realign after a torn frame), so after
// damage the next good frame is found by trying each aligned offset in turn.
std::optional<uint64_t> FindNextIntactFrame(std::span<const std::byte> file, uint64_t from) {
  // Written as an addition: `from` may already lie past the end of the file.
  for (uint64_t offset = from; offset + kTraceFrameHeaderSize <= file.size();
       offset += kTraceFrameAlignment) {
    if (ProbeFrame(file, offset).verdict == FrameVerdict::kIntact) return offset;
  }
  return std::nullopt;
}

// Tells torn writes from corruption where the layout allows: a torn frame is overrun by the next
// writer's frame, which therefore starts before the torn frame's claimed end, while a corrupted
// frame is followed by the next frame exactly where its own length says.
std::string DamageReason(const FrameProbe& probe, uint64_t offset,
                         std::optional<uint64_t> next_intact) {
  constexpr std::string_view kTruncatedFinal = "truncated final record (writer killed mid-write?)";
  const uint64_t claimed_end = offset + kTraceFrameHeaderSize + probe.payload_length;
  switch (probe.verdict) {
    case FrameVerdict::kPartialHeader:
      return std::string(kTruncatedFinal);
    case FrameVerdict::kRunsPastEnd:
      if (!next_intact.has_value()) return std::string(kTruncatedFinal);
      [[fallthrough]];
    case FrameVerdict::kPayloadChecksumMismatch:
      if (next_intact.has_value() && *next_intact < claimed_end) {
        return fmt::format(
            "incomplete record of {} bytes, cut short by a later record (writer killed "
            "mid-write?)",
            probe.payload_length);
      }
      return fmt::format("record of {} bytes fails its payload checksum (corrupted)",
                         probe.payload_length);
    case FrameVerdict::kNoFrameMarker:
      return "no record marker (overwritten or foreign bytes)";
    case FrameVerdict::kHeaderChecksumMismatch:
      return "record header fails its checksum (torn or corrupted)";
    case FrameVerdict::kIntact:
      break;
  }
  return "intact record reported as damage (reader bug)";
}

void ParseFrames(std::span<const std::byte> file, TraceLog& log) {
  uint64_t offset = kTraceFileHeaderSize;
  while (offset < file.size()) {
    const FrameProbe probe = ProbeFrame(file, offset);
    if (probe.verdict == FrameVerdict::kIntact) {
      log.frames.push_back(file.subspan(offset + kTraceFrameHeaderSize, probe.payload_length));
      // A final frame may lack its padding; the loop then simply ends.
      offset = AlignUp(offset + kTraceFrameHeaderSize + probe.payload_length);
      continue;
    }
    const std::optional<uint64_t> next = FindNextIntactFrame(file, offset + kTraceFrameAlignment);
    const uint64_t end = next.value_or(file.size());
    log.damage.push_back(Damage{
        .offset = offset, .length = end - offset, .reason = DamageReason(probe, offset, next)});
    offset = end;
  }
}

// Closes a descriptor on every return path.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_;
};

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(fmt::format("trace file {} does not exist", path));
    }
    return absl::ErrnoToStatus(error, fmt::format("cannot open trace file {}", path));
  }
  const FileDescriptor file(fd);
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    return absl::ErrnoToStatus(errno, fmt::format("cannot stat trace file {}", path));
  }
  if (S_ISDIR(info.st_mode)) {
    return absl::InvalidArgumentError(fmt::format("{} is a directory, not a trace file", path));
  }
  // Reads the size seen now: frames appended meanwhile by live writers are left for a later read
  // rather than chased, so the result is a consistent prefix.
  std::string bytes(static_cast<size_t>(std::max<off_t>(info.st_size, 0)), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pread(fd, bytes.data() + done, bytes.size() - done, done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(errno, fmt::format("cannot read trace file {}", path));
    }
    if (n == 0) break;  // Truncated by someone since fstat.
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

// ---------------------------------------------------------------------------------------------
// Writing.

absl::StatusOr<uint64_t> FileSize(int fd, const std::string& path) {
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    return absl::ErrnoToStatus(errno, fmt::format("cannot stat trace file {}", path));
  }
  return static_cast<uint64_t>(info.st_size);
}

// Holds flock(LOCK_EX) for its lifetime: the one thing that keeps frames of concurrent writer
// processes from interleaving. The kernel drops it if the process dies.
class ExclusiveFileLock {
 public:
  ExclusiveFileLock(int fd, const std::string& path) : fd_(fd) {
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      status_ = absl::ErrnoToStatus(errno, fmt::format("cannot lock trace file {}", path));
      break;
    }
  }
  ExclusiveFileLock(const ExclusiveFileLock&) = delete;
  ExclusiveFileLock& operator=(const ExclusiveFileLock&) = delete;
  ~ExclusiveFileLock() {
    if (status_.ok()) ::flock(fd_, LOCK_UN);
  }
  const absl::Status& status() const { return status_; }

 private:
  int fd_;
  absl::Status status_;
};

// Called under the lock. A fresh file gets its header; an existing one must already be ours.
absl::Status PrepareFileForAppending(int fd, const std::string& path) {
  const absl::StatusOr<uint64_t> size = FileSize(fd, path);
  if (!size.ok()) return size.status();
  if (*size == 0) return WriteAll(fd, EncodeFileHeader(), "trace file " + path);

  std::array<std::byte, kTraceFileHeaderSize> header{};
  const size_t wanted = static_cast<size_t>(std::min<uint64_t>(*size, header.size()));
  size_t got = 0;
  while (got < wanted) {
    const ssize_t n = ::pread(fd, header.data() + got, wanted - got, got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(errno, fmt::format("cannot read header of trace file {}", path));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  const std::span<const std::byte> seen(header.data(), got);
  if (!StartsLikeTrace(seen)) {
    return absl::FailedPreconditionError(
        fmt::format("refusing to append to {}: it is not a spreplay trace (starts with {})", path,
                    DescribeLeadingBytes(seen, kTraceFileMagic.size())));
  }
  if (got < header.size()) {
    return absl::FailedPreconditionError(fmt::format(
        "refusing to append to {}: its {} bytes are too few for a trace header", path, *size));
  }
  const absl::StatusOr<uint32_t> version = CheckFileHeader(header, path);
  if (!version.ok()) {
    return absl::FailedPreconditionError(
        fmt::format("refusing to append: {}", std::string(version.status().message())));
  }
  if (*version != kTraceFormatVersion) {
    return absl::FailedPreconditionError(
        fmt::format("refusing to append to {}: it holds trace format {}, this build writes {}",
                    path, *version, kTraceFormatVersion));
  }
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// TraceLogWriter

struct TraceLogWriter::OpenFile {
  OpenFile(int fd, std::string path) : fd(fd), path(std::move(path)) {}
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  ~OpenFile() { ::close(fd); }

  const int fd;
  const std::string path;
  // flock() cannot separate threads that share one open file description, so threads appending
  // through this writer are serialised here first.
  std::mutex mutex;
};

TraceLogWriter::TraceLogWriter(std::unique_ptr<OpenFile> file) : file_(std::move(file)) {}
TraceLogWriter::TraceLogWriter(TraceLogWriter&&) noexcept = default;
TraceLogWriter& TraceLogWriter::operator=(TraceLogWriter&&) noexcept = default;
TraceLogWriter::~TraceLogWriter() = default;

absl::StatusOr<TraceLogWriter> TraceLogWriter::Open(const std::string& path) {
  // O_RDWR rather than O_WRONLY only so the existing header can be pread and checked; O_APPEND
  // makes every write land at the current end of file whoever wrote last.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, fmt::format("cannot open trace file {} for appending", path));
  }
  auto file = std::make_unique<OpenFile>(fd, path);
  {
    // The header is checked once here; Append then only has to handle files that are empty or
    // misaligned, both of which it can see from the size alone.
    const ExclusiveFileLock lock(fd, file->path);
    if (!lock.status().ok()) return lock.status();
    if (absl::Status status = PrepareFileForAppending(fd, file->path); !status.ok()) {
      return status;
    }
  }
  return TraceLogWriter(std::move(file));
}

absl::Status TraceLogWriter::Append(std::span<const std::byte> payload) {
  if (file_ == nullptr) {
    return absl::FailedPreconditionError("Append on a moved-from TraceLogWriter");
  }
  if (payload.size() > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(
        fmt::format("record of {} bytes is too large for trace file {} (limit 4 GiB - 1)",
                    payload.size(), file_->path));
  }
  // Checksumming and copying happen before taking the lock to keep other writers' wait short.
  const std::vector<std::byte> frame = EncodeFrame(payload);

  const std::lock_guard<std::mutex> thread_guard(file_->mutex);
  const int fd = file_->fd;
  const std::string& path = file_->path;
  const ExclusiveFileLock lock(fd, path);
  if (!lock.status().ok()) return lock.status();

  const absl::StatusOr<uint64_t> size_before = FileSize(fd, path);
  if (!size_before.ok()) return size_before.status();
  const uint64_t size = *size_before;

  absl::Status status = absl::OkStatus();
  if (size == 0) {
    // Someone truncated the file since Open; start it over as a trace rather than write frames
    // no reader would accept.
    status = WriteAll(fd, EncodeFileHeader(), "trace file " + path);
  } else if (size < kTraceFileHeaderSize) {
    return absl::FailedPreconditionError(fmt::format(
        "refusing to append to {}: it shrank to {} bytes, less than a trace header", path, size));
  } else if (size % kTraceFrameAlignment != 0) {
    // A writer died mid-frame. Padding restores alignment so that readers, which look for frames
    // only at aligned offsets, find this frame after skipping the torn one.
    const std::array<std::byte, kTraceFrameAlignment> zeros{};
    status =
        WriteAll(fd, std::span(zeros).first(kTraceFrameAlignment - size % kTraceFrameAlignment),
                 "trace file " + path);
  }
  if (status.ok()) status = WriteAll(fd, frame, "trace file " + path);
  if (!status.ok()) {
    // Best effort: drop our partial frame (e.g. disk full) so it is not left as damage. Safe
    // because the lock keeps other writers from having appended after it.
    (void)::ftruncate(fd, static_cast<off_t>(size));
  }
  return status;
}

absl::Status TraceLogWriter::Sync() {
  if (file_ == nullptr) {
    return absl::FailedPreconditionError("Sync on a moved-from TraceLogWriter");
  }
  while (::fdatasync(file_->fd) != 0) {
    if (errno == EINTR) continue;
    return absl::ErrnoToStatus(errno, fmt::format("cannot sync trace file {}", file_->path));
  }
  return absl::OkStatus();
}

const std::string& TraceLogWriter::path() const { return file_->path; }

// ---------------------------------------------------------------------------------------------
// Reader

absl::StatusOr<TraceLog> ReadTraceLog(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  return ParseTraceLog(*std::move(bytes), path);
}

absl::StatusOr<TraceLog> ParseTraceLog(std::string bytes, std::string_view source_name) {
  const auto whole = std::as_bytes(std::span(bytes.data(), bytes.size()));
  if (whole.empty()) {
    return absl::DataLossError(fmt::format(
        "{} is empty: a spreplay trace has at least a {}-byte header (recorder killed at start?)",
        source_name, kTraceFileHeaderSize));
  }
  if (!StartsLikeTrace(whole)) {
    return absl::InvalidArgumentError(
        fmt::format("{} is not a spreplay trace (starts with {})", source_name,
                    DescribeLeadingBytes(whole, kTraceFileMagic.size())));
  }
  if (whole.size() < kTraceFileHeaderSize) {
    return absl::DataLossError(
        fmt::format("{} is truncated: {} bytes, a spreplay trace has at least {}", source_name,
                    whole.size(), kTraceFileHeaderSize));
  }
  const absl::StatusOr<uint32_t> version =
      CheckFileHeader(whole.first(kTraceFileHeaderSize), source_name);
  if (!version.ok()) return version.status();

  TraceLog log;
  log.format_version = *version;
  // The smallest trace holding a frame is 32 bytes, past every standard library's small-string
  // buffer, so whenever there are frames the string owns a heap buffer: moving it (and so the
  // TraceLog) keeps the buffer where the spans point.
  log.bytes = std::move(bytes);
  const auto file = std::as_bytes(std::span(log.bytes.data(), log.bytes.size()));
  if (file.size() > kTraceFileHeaderSize &&
      reinterpret_cast<uintptr_t>(file.data()) % kTraceFrameAlignment != 0) {
    // operator new returns at least 16-byte aligned memory on every platform we build for; the
    // promise that payloads are 8-byte aligned rests on it.
    return absl::InternalError("trace buffer is not 8-byte aligned");
  }
  ParseFrames(file, log);
  return log;
}

std::string DescribeDamage(const TraceLog& log) {
  const size_t records = log.frames.size();
  const std::string records_text = fmt::format("{} record{}", records, records == 1 ? "" : "s");
  if (log.damage.empty()) return fmt::format("{}, no damage", records_text);
  uint64_t damaged_bytes = 0;
  for (const Damage& damage : log.damage) damaged_bytes += damage.length;
  const Damage& first = log.damage.front();
  return fmt::format("{}; {} damaged region{} ({} bytes), first at offset {}: {}", records_text,
                     log.damage.size(), log.damage.size() == 1 ? "" : "s", damaged_bytes,
                     first.offset, first.reason);
}

}  // namespace spreplay
