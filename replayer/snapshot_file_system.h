#pragma once
// The file system a replayed session compiles against: recorded file bytes,
// served by their recorded absolute paths, so that a kernel recorded on one
// machine compiles on another where none of those paths exist.
//
// It answers the way Slang's OS file system (wrapped in its CacheFileSystem)
// answered at recording time, because Slang derives observable state from
// those answers: a module's found path is the combined search path, its
// unique identity (and dependency paths, and the key that deduplicates a
// module imported under two names) is the canonical path, and diagnostics and
// #line directives use the display path. Slang would wrap a plain
// ISlangFileSystem in a CacheFileSystem that makes up "name:hash" identities,
// so this implements ISlangFileSystemExt.
//
// Hermetic: a path the snapshot does not hold is not found, whatever the
// local disk has. Files can be added over the file system's life (a session
// reused for several kernels) but never changed; Admit refuses a set of files
// that would contradict an earlier answer.

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "interpose/com_object.h"
#include "replayer/com_ptr.h"
#include "slang.h"

namespace spreplay {

using FileMap = absl::flat_hash_map<std::string, std::shared_ptr<const std::string>>;

class SnapshotFileSystem final : public ComObject<ISlangFileSystemExt> {
 public:
  // `working_directory`: the recording process's, against which relative
  // paths resolve as they did there; "" leaves relative paths unresolved.
  static ComPtr<SnapshotFileSystem> Create(std::string working_directory = "");

  // Adds `files` (absolute paths) unless one of them holds other bytes than
  // the same path already does, or was already reported missing to Slang:
  // then nothing is added and the error names the path.
  absl::Status Admit(const FileMap& files);
  // A directory that exists even if no recorded file lies in it (a search path).
  void AddDirectory(std::string_view path);
  // Makes paths under `from` resolve to the same paths under `to`, the way a
  // symbolic link on the recording machine did; `to` is where the snapshot's
  // (canonical) paths lie. Refused when Slang was already told that a path
  // under `from` does not exist.
  absl::Status AddDirectoryAlias(std::string_view from, std::string_view to);

  // `path` made absolute against the working directory and simplified;
  // nullopt for a relative path without one.
  std::optional<std::string> Absolute(std::string_view path) const;
  // The canonical path of a file or directory the snapshot holds.
  std::optional<std::string> Canonical(std::string_view path) const;
  // The bytes of a file by any path that resolves to it; null if absent.
  std::shared_ptr<const std::string> Find(std::string_view path) const;

  // ISlangCastable
  SLANG_NO_THROW void* SLANG_MCALL castAs(const SlangUUID& guid) override;
  // ISlangFileSystem
  SLANG_NO_THROW SlangResult SLANG_MCALL loadFile(const char* path, ISlangBlob** out) override;
  // ISlangFileSystemExt
  SLANG_NO_THROW SlangResult SLANG_MCALL getFileUniqueIdentity(const char* path,
                                                               ISlangBlob** out) override;
  SLANG_NO_THROW SlangResult SLANG_MCALL calcCombinedPath(SlangPathType from_type,
                                                          const char* from_path, const char* path,
                                                          ISlangBlob** out) override;
  SLANG_NO_THROW SlangResult SLANG_MCALL getPathType(const char* path, SlangPathType* out) override;
  SLANG_NO_THROW SlangResult SLANG_MCALL getPath(PathKind kind, const char* path,
                                                 ISlangBlob** out) override;
  SLANG_NO_THROW void SLANG_MCALL clearCache() override {}
  SLANG_NO_THROW SlangResult SLANG_MCALL enumeratePathContents(const char* path,
                                                               FileSystemContentsCallBack callback,
                                                               void* user_data) override;
  // Paths here do not name files of the local OS, so Slang must never hand
  // them to a tool that reads the disk.
  SLANG_NO_THROW OSPathKind SLANG_MCALL getOSPathKind() override { return OSPathKind::None; }

 private:
  bool Implements(const SlangUUID& uuid) const override;
  explicit SnapshotFileSystem(std::string working_directory)
      : working_directory_(std::move(working_directory)) {}
  ~SnapshotFileSystem() = default;

  // The path `path` stands for after simplification and aliases; nullopt for
  // a relative path when the recording's working directory is unknown.
  std::optional<std::string> ResolveLocked(std::string_view path) const;
  void AddDirectoryLocked(std::string_view path);
  // Remembers a lookup that failed, so Admit can refuse files that would
  // have changed its answer.
  void NoteMissingLocked(std::string_view path);

  const std::string working_directory_;
  mutable std::mutex mutex_;
  FileMap files_;
  absl::btree_set<std::string> directories_;
  absl::btree_map<std::string, std::string> aliases_;  // from -> to
  absl::flat_hash_set<std::string> missing_;
};

}  // namespace spreplay
