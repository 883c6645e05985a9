#include "replayer/path_aliases.h"

#include <string>

#include "absl/container/flat_hash_set.h"
#include "replayer/slang_path.h"

namespace spreplay {
namespace {

absl::Status AliasModule(const Component& module, SnapshotFileSystem& files) {
  if (module.source || module.path.empty() || files.Canonical(module.path)) return absl::OkStatus();
  const std::string file_name = slang_path::FileName(module.path);
  const SourceFile* match = nullptr;
  for (const SourceFile& dependency : module.dependencies) {
    if (slang_path::FileName(dependency.path) != file_name || !files.Find(dependency.path))
      continue;
    // Two candidates: guessing could map the module onto the wrong file.
    if (match) return absl::OkStatus();
    match = &dependency;
  }
  if (!match) return absl::OkStatus();
  // A module found by a relative path (a bare name from the app's directory)
  // lies where the recording's working directory put it.
  const std::string from =
      slang_path::ParentDirectory(files.Absolute(module.path).value_or(module.path));
  const std::string to = slang_path::ParentDirectory(match->path);
  return from == to ? absl::OkStatus() : files.AddDirectoryAlias(from, to);
}

absl::Status Visit(const ComponentPtr& node, absl::flat_hash_set<const Component*>& seen,
                   SnapshotFileSystem& files) {
  if (!node || !seen.insert(node.get()).second) return absl::OkStatus();
  if (node->kind == Component::Kind::kModule) return AliasModule(*node, files);
  for (const ComponentPtr& child : node->children) {
    if (absl::Status status = Visit(child, seen, files); !status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status AddDirectoryAliases(const ComponentPtr& program, SnapshotFileSystem& files) {
  absl::flat_hash_set<const Component*> seen;
  return Visit(program, seen, files);
}

}  // namespace spreplay
