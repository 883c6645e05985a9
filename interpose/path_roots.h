#pragma once
// Names a source file by the directory it was found under (slangpy's
// installation, a search path of the session, the working directory) and
// its path below it, so that a file recorded in one place can be found in
// another: an app and its virtualenv moved or installed elsewhere keep
// their layout below those roots.

#include <cstdint>
#include <string>
#include <vector>

#include "interpose/session_config.h"

namespace spreplay {

enum class PathRoot : uint8_t { kAbsolute, kSlangpy, kSearchPath, kWorkingDirectory };

struct RootedPath {
  PathRoot root = PathRoot::kAbsolute;
  // kSearchPath: which of the directories Slang searches (the Include
  // options, then config.search_paths), counted from the last: slangpy puts
  // the directories of its module cache ahead of the others.
  uint32_t index = 0;
  std::string relative;  // below the root; the whole path for kAbsolute
};

// `path` (absolute) below the innermost root of `config` that holds it.
RootedPath RootPath(const SessionConfig& config, const std::string& path);

// Where `rooted` lies for `config`; "" when `config` has no such root.
std::string PathUnderRoot(const SessionConfig& config, const RootedPath& rooted);

// The paths Slang would look at before `rooted`'s when it searches the
// session's search paths in order: a file appearing at one of them would
// be found instead.
std::vector<std::string> PathsSearchedBefore(const SessionConfig& config, const RootedPath& rooted);

}  // namespace spreplay
