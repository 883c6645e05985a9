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

// kRequestDirectory: below the directory of a module the app asked for by
// absolute path (sgl's load_program("/abs/x.slang", ...)) that no other root
// holds; the directory is the one such a request names when served, so a
// file there is found beside whichever module is asked for by that path now.
enum class PathRoot : uint8_t {
  kAbsolute,
  kSlangpy,
  kSearchPath,
  kWorkingDirectory,
  kRequestDirectory
};

struct RootedPath {
  PathRoot root = PathRoot::kAbsolute;
  // kSearchPath: which of the directories Slang searches (the Include
  // options, then config.search_paths), counted from the last: slangpy puts
  // the directories of its module cache ahead of the others.
  // kRequestDirectory: which of the recording's request directories.
  uint32_t index = 0;
  std::string relative;  // below the root; the whole path for kAbsolute
};

// `path` (absolute) below the innermost root of `config` that holds it.
// `request_directories`: the directories of the modules requested by absolute
// path (RequestDirectories); one that holds `path` ranks above the working
// directory, which does not take part in resolving an absolute request.
RootedPath RootPath(const SessionConfig& config, const std::string& path,
                    const std::vector<std::string>& request_directories = {});

// Where `rooted` lies for `config`; "" when `config` has no such root.
// `request_directory`: where request directory `request_index` lies now.
std::string PathUnderRoot(const SessionConfig& config, const RootedPath& rooted,
                          uint32_t request_index = 0, const std::string& request_directory = "");

// The directories of `requested` (absolute module requests) that no root of
// `config` but the working directory holds, outermost only, sorted: every
// path lies below one of them at most.
std::vector<std::string> RequestDirectories(const SessionConfig& config,
                                            const std::vector<std::string>& requested);

// The paths Slang would look at before `rooted`'s when it searches the
// session's search paths in order: a file appearing at one of them would
// be found instead.
std::vector<std::string> PathsSearchedBefore(const SessionConfig& config, const RootedPath& rooted);

}  // namespace spreplay
