// Publishes a file atomically: readers of the destination path see either its previous contents
// or the complete new ones, never a partial write or a mix, even if the writer dies midway or
// several writers race. The runtime maps archives while `spreplay compile` may be replacing them,
// which is why this matters.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace spreplay {

// Writes to a uniquely named temporary file next to the destination, then fsyncs and renames it
// over the destination and fsyncs the directory. rename() within one directory is atomic, and the
// fsyncs make the new contents durable before and after they become visible.
//
// If Commit() is never reached (an error, an early return), the destructor removes the temporary
// file, so failed writes leave nothing behind. A process killed outright can still leave one:
// it is named ".<name>.tmp-<pid>-<random>" so it is recognisable and never collides.
class AtomicFileWriter {
 public:
  static absl::StatusOr<AtomicFileWriter> Create(std::string destination_path);

  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&&) = delete;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  // Appends to the temporary file.
  absl::Status Write(std::span<const std::byte> bytes);
  absl::Status WriteZeros(size_t count);

  // Makes the written bytes the contents of the destination path. Call at most once; the writer
  // cannot be used afterwards, whether it succeeded or not.
  absl::Status Commit();

 private:
  AtomicFileWriter(int fd, std::string destination_path, std::string temp_path);
  void Abandon();

  int fd_;  // -1 once closed.
  std::string destination_path_;
  std::string temp_path_;  // Empty once renamed or removed.
};

}  // namespace spreplay
