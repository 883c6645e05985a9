#include "replayer/snapshot_file_system.h"

#include "fmt/format.h"
#include "interpose/blobs.h"
#include "replayer/slang_path.h"

namespace spreplay {
namespace {

bool IsUnder(std::string_view path, std::string_view directory) {
  if (directory == "/") return slang_path::IsAbsolute(path);
  return path == directory ||
         (path.starts_with(directory) && slang_path::IsDelimiter(path[directory.size()]));
}

// The directory holding `path`, with "/" for top-level entries (where Slang's
// ParentDirectory returns ""); "" for the root itself.
std::string EnclosingDirectory(std::string_view path) {
  if (path == "/") return "";
  std::string parent = slang_path::ParentDirectory(path);
  return parent.empty() && slang_path::IsAbsolute(path) ? "/" : parent;
}

SlangResult ReturnString(std::string text, ISlangBlob** out) {
  *out = NewOwnedBlob(std::move(text));
  return SLANG_OK;
}

}  // namespace

ComPtr<SnapshotFileSystem> SnapshotFileSystem::Create(std::string working_directory) {
  return ComPtr<SnapshotFileSystem>(new SnapshotFileSystem(std::move(working_directory)));
}

absl::Status SnapshotFileSystem::Admit(const FileMap& files) {
  std::lock_guard lock(mutex_);
  for (const auto& [path, bytes] : files) {
    if (!slang_path::IsAbsolute(path))
      return absl::InvalidArgumentError(fmt::format("snapshot path {} is not absolute", path));
    auto it = files_.find(path);
    if (it != files_.end()) {
      if (it->second != bytes && *it->second != *bytes)
        return absl::FailedPreconditionError(fmt::format("{} has other contents", path));
      continue;
    }
    // The file, or a directory above it, was looked up and not found before:
    // with it present, that lookup would have gone differently.
    for (std::string at = path; !at.empty(); at = EnclosingDirectory(at)) {
      if (missing_.contains(at))
        return absl::FailedPreconditionError(fmt::format("{} was looked up and missing", at));
    }
  }
  for (const auto& [path, bytes] : files) {
    if (!files_.try_emplace(path, bytes).second) continue;
    AddDirectoryLocked(EnclosingDirectory(path));
  }
  return absl::OkStatus();
}

void SnapshotFileSystem::AddDirectory(std::string_view path) {
  std::lock_guard lock(mutex_);
  AddDirectoryLocked(Absolute(path).value_or(slang_path::Simplify(path)));
}

void SnapshotFileSystem::AddDirectoryLocked(std::string_view path) {
  for (std::string at(path); !at.empty() && directories_.insert(at).second;
       at = EnclosingDirectory(at)) {
  }
}

absl::Status SnapshotFileSystem::AddDirectoryAlias(std::string_view from, std::string_view to) {
  std::lock_guard lock(mutex_);
  const std::string source = Absolute(from).value_or(std::string(from));
  const std::string target = Absolute(to).value_or(std::string(to));
  if (!slang_path::IsAbsolute(source) || !slang_path::IsAbsolute(target))
    return absl::InvalidArgumentError(fmt::format("alias {} -> {} is not absolute", from, to));
  if (auto it = aliases_.find(source); it != aliases_.end())
    return it->second == target ? absl::OkStatus()
                                : absl::FailedPreconditionError(
                                      fmt::format("{} already stands for {}", source, it->second));
  for (const std::string& missing : missing_) {
    if (IsUnder(missing, source))
      return absl::FailedPreconditionError(fmt::format("{} was looked up and missing", missing));
  }
  aliases_.emplace(source, target);
  AddDirectoryLocked(EnclosingDirectory(source));
  return absl::OkStatus();
}

std::optional<std::string> SnapshotFileSystem::Absolute(std::string_view path) const {
  if (slang_path::IsAbsolute(path)) return slang_path::Simplify(path);
  if (working_directory_.empty()) return std::nullopt;
  return slang_path::Simplify(slang_path::Combine(working_directory_, path));
}

std::optional<std::string> SnapshotFileSystem::ResolveLocked(std::string_view path) const {
  std::optional<std::string> absolute = Absolute(path);
  if (!absolute) return std::nullopt;
  std::string simplified = *std::move(absolute);
  // The longest alias wins, as the innermost symbolic link would.
  const std::string* best_from = nullptr;
  const std::string* best_to = nullptr;
  for (const auto& [from, to] : aliases_) {
    if (IsUnder(simplified, from) && (!best_from || from.size() > best_from->size())) {
      best_from = &from;
      best_to = &to;
    }
  }
  if (best_from) simplified = *best_to + simplified.substr(best_from->size());
  return simplified;
}

void SnapshotFileSystem::NoteMissingLocked(std::string_view path) {
  if (std::optional<std::string> resolved = ResolveLocked(path)) missing_.insert(*resolved);
}

std::optional<std::string> SnapshotFileSystem::Canonical(std::string_view path) const {
  std::lock_guard lock(mutex_);
  std::optional<std::string> resolved = ResolveLocked(path);
  if (!resolved || (!files_.contains(*resolved) && !directories_.contains(*resolved)))
    return std::nullopt;
  return resolved;
}

std::shared_ptr<const std::string> SnapshotFileSystem::Find(std::string_view path) const {
  std::lock_guard lock(mutex_);
  std::optional<std::string> resolved = ResolveLocked(path);
  if (!resolved) return nullptr;
  auto it = files_.find(*resolved);
  return it == files_.end() ? nullptr : it->second;
}

void* SnapshotFileSystem::castAs(const SlangUUID& guid) {
  return Implements(guid) ? static_cast<ISlangFileSystemExt*>(this) : nullptr;
}

bool SnapshotFileSystem::Implements(const SlangUUID& uuid) const {
  // Not ISlangMutableFileSystem: Slang must not write into a snapshot.
  return SameUuid(uuid, ISlangUnknown::getTypeGuid()) ||
         SameUuid(uuid, ISlangCastable::getTypeGuid()) ||
         SameUuid(uuid, ISlangFileSystem::getTypeGuid()) ||
         SameUuid(uuid, ISlangFileSystemExt::getTypeGuid());
}

SlangResult SnapshotFileSystem::loadFile(const char* path, ISlangBlob** out) {
  *out = nullptr;
  std::shared_ptr<const std::string> bytes = Find(path);
  if (!bytes) {
    std::lock_guard lock(mutex_);
    NoteMissingLocked(path);
    return SLANG_E_NOT_FOUND;
  }
  *out = NewSharedBlob(std::move(bytes));
  return SLANG_OK;
}

SlangResult SnapshotFileSystem::getFileUniqueIdentity(const char* path, ISlangBlob** out) {
  // Slang's OS file system identifies files and directories by canonical path.
  std::optional<std::string> canonical = Canonical(path);
  if (!canonical) {
    std::lock_guard lock(mutex_);
    NoteMissingLocked(path);
    *out = nullptr;
    return SLANG_E_NOT_FOUND;
  }
  return ReturnString(std::move(*canonical), out);
}

SlangResult SnapshotFileSystem::calcCombinedPath(SlangPathType from_type, const char* from_path,
                                                 const char* path, ISlangBlob** out) {
  const std::string base = from_type == SLANG_PATH_TYPE_FILE
                               ? slang_path::ParentDirectory(from_path)
                               : std::string(from_path);
  return ReturnString(slang_path::Combine(base, path), out);
}

SlangResult SnapshotFileSystem::getPathType(const char* path, SlangPathType* out) {
  std::lock_guard lock(mutex_);
  std::optional<std::string> resolved = ResolveLocked(path);
  if (resolved && files_.contains(*resolved)) {
    *out = SLANG_PATH_TYPE_FILE;
    return SLANG_OK;
  }
  if (resolved && directories_.contains(*resolved)) {
    *out = SLANG_PATH_TYPE_DIRECTORY;
    return SLANG_OK;
  }
  NoteMissingLocked(path);
  return SLANG_E_NOT_FOUND;
}

SlangResult SnapshotFileSystem::getPath(PathKind kind, const char* path, ISlangBlob** out) {
  *out = nullptr;
  switch (kind) {
    case PathKind::Simplified:
      return ReturnString(slang_path::Simplify(path), out);
    case PathKind::Canonical:
      return getFileUniqueIdentity(path, out);
    case PathKind::Display:
    case PathKind::OperatingSystem: {
      // As Slang's OS file system: the canonical path, else the simplified one.
      std::optional<std::string> canonical = Canonical(path);
      return ReturnString(canonical ? std::move(*canonical) : slang_path::Simplify(path), out);
    }
    default:
      return SLANG_E_NOT_AVAILABLE;
  }
}

SlangResult SnapshotFileSystem::enumeratePathContents(const char* path,
                                                      FileSystemContentsCallBack callback,
                                                      void* user_data) {
  std::vector<std::pair<SlangPathType, std::string>> entries;
  {
    std::lock_guard lock(mutex_);
    std::optional<std::string> directory = ResolveLocked(path);
    if (!directory || !directories_.contains(*directory)) return SLANG_E_NOT_FOUND;
    for (const auto& [file, bytes] : files_) {
      if (EnclosingDirectory(file) == *directory)
        entries.emplace_back(SLANG_PATH_TYPE_FILE, slang_path::FileName(file));
    }
    for (const std::string& child : directories_) {
      if (EnclosingDirectory(child) == *directory)
        entries.emplace_back(SLANG_PATH_TYPE_DIRECTORY, slang_path::FileName(child));
    }
  }
  // Called without the lock: the callback may well query this file system.
  for (const auto& [type, name] : entries) callback(type, name.c_str(), user_data);
  return SLANG_OK;
}

}  // namespace spreplay
