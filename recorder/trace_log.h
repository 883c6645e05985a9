// The on-disk container of a trace: an append-only file of checksummed frames, each holding one
// opaque payload. Many processes of one recorded program append to the same file, any of them
// may be killed at any instant, and the reader must still recover every record that was fully
// written. Hence: whole frames written under an exclusive flock, an 8-byte alignment that lets
// the reader find frames again after damage, and CRCs that tell complete frames from torn ones.
//
// Layout (all integers little-endian):
//   file header, 16 bytes:  "SPRTRACE" | uint32 format version | uint32 zero
//   frames, each at an 8-byte aligned offset:
//     uint32 0x46525053 ("SPRF") | uint32 payload length | uint32 crc32c(payload)
//     | uint32 crc32c(previous 12 header bytes) | payload | zero padding to 8-byte alignment
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace spreplay {

inline constexpr std::string_view kTraceFileMagic = "SPRTRACE";
// 2: files keyed by the distinguishing part of their path, type conformances
// with the files of the modules declaring their type. Older traces hold
// other keys and are refused.
inline constexpr uint32_t kTraceFormatVersion = 2;
inline constexpr size_t kTraceFileHeaderSize = 16;
inline constexpr uint32_t kTraceFrameMagic = 0x46525053;  // "SPRF" when stored little-endian.
inline constexpr size_t kTraceFrameHeaderSize = 16;
inline constexpr size_t kTraceFrameAlignment = 8;

// Appends frames to a trace file; safe against concurrent writers in other processes and in
// other threads of this one.
//
// flock() locks belong to the open file description, so a writer inherited across fork() shares
// its lock with the parent and no longer excludes it: a child process must Open() its own writer.
class TraceLogWriter {
 public:
  // Creates the file (with its header) if it is missing or empty. Fails if the file holds
  // something other than a trace of this format version, so a wrong path never gets clobbered.
  static absl::StatusOr<TraceLogWriter> Open(const std::string& path);

  TraceLogWriter(TraceLogWriter&&) noexcept;
  TraceLogWriter& operator=(TraceLogWriter&&) noexcept;
  ~TraceLogWriter();

  // Writes one frame holding `payload` (at most 4 GiB - 1 bytes). The frame lands contiguously
  // after every frame already in the file. If a previous writer died mid-frame, this first pads
  // the file back to 8-byte alignment so readers can resynchronise on this frame.
  absl::Status Append(std::span<const std::byte> payload);

  // Makes appended frames durable (fdatasync). Appends are already visible to readers without it.
  absl::Status Sync();

  const std::string& path() const;

 private:
  struct OpenFile;
  explicit TraceLogWriter(std::unique_ptr<OpenFile> file);

  // Behind a pointer so the writer stays movable while owning a mutex.
  std::unique_ptr<OpenFile> file_;
};

// A stretch of the file that held no verifiable frame.
struct Damage {
  uint64_t offset = 0;  // In the file, including its header.
  uint64_t length = 0;
  std::string reason;
};

// A trace file read into memory. `frames` point into `bytes`, so the struct is move-only:
// a copy would leave the copy's frames pointing into the original.
struct TraceLog {
  TraceLog() = default;
  TraceLog(TraceLog&&) = default;
  TraceLog& operator=(TraceLog&&) = default;
  TraceLog(const TraceLog&) = delete;
  TraceLog& operator=(const TraceLog&) = delete;

  std::string bytes;
  // Payloads of every intact frame, in file order; each starts at an 8-byte aligned address.
  std::vector<std::span<const std::byte>> frames;
  // Regions skipped because they held torn or corrupt frames, in file order. Damage does not
  // make the read fail: every intact frame around it is still returned.
  std::vector<Damage> damage;
  uint32_t format_version = 0;
};

// Fails, with a message naming the file, only when no frame can be trusted at all: the file is
// missing (NotFound) or unreadable, is empty or shorter than the file header (DataLoss), is not a
// trace (InvalidArgument), or was written by a newer format version (FailedPrecondition).
// Frames appended while the read is in progress are not included.
absl::StatusOr<TraceLog> ReadTraceLog(const std::string& path);

// As ReadTraceLog, for a trace already in memory; `source_name` names it in error messages.
absl::StatusOr<TraceLog> ParseTraceLog(std::string bytes,
                                       std::string_view source_name = "trace buffer");

// One line for humans, e.g. "120 records, no damage" or
// "118 records; 2 damaged regions (4136 bytes), first at offset 65552: truncated final ...".
std::string DescribeDamage(const TraceLog& log);

}  // namespace spreplay
