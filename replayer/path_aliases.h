#pragma once
// Recovers symbolic links of the recording machine that the snapshot cannot
// show by itself.
//
// A module's dependency paths are canonical (Slang's OS file system resolves
// symbolic links), but its own path is the path Slang found it under: a
// search path joined with a file name. When a search path ran through a
// symbolic link the two disagree, and the replay must map the found path's
// directory onto the canonical one for Slang to find the file again.

#include "absl/status/status.h"
#include "interpose/component.h"
#include "replayer/snapshot_file_system.h"

namespace spreplay {

// For every file module of `program` whose found path the snapshot does not
// hold while exactly one of its dependencies has the same file name, makes
// the found path's directory an alias of that dependency's directory.
absl::Status AddDirectoryAliases(const ComponentPtr& program, SnapshotFileSystem& files);

}  // namespace spreplay
