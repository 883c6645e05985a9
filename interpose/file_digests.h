#pragma once
// Content digests of the source files Slang read, memoized per process.
//
// The memo is keyed by the file's identity and modification stamp so that a
// file edited during the process (slangpy's hot reload) is hashed again. It is
// a cache of content hashes; keys themselves only ever contain content.

#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/sha256.h"

namespace spreplay {

struct FileContent {
  Digest digest;
  std::shared_ptr<const std::string> bytes;
};

class FileDigests {
 public:
  absl::StatusOr<FileContent> Read(const std::string& path);

 private:
  struct Stamp {
    uint64_t device, inode, size;
    int64_t mtime_ns;
    bool operator==(const Stamp&) const = default;
  };
  std::mutex mutex_;
  absl::flat_hash_map<std::string, std::pair<Stamp, FileContent>> memo_;
};

}  // namespace spreplay
