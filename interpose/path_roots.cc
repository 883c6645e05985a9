#include "interpose/path_roots.h"

#include <algorithm>

namespace spreplay {
namespace {

std::string Join(const std::string& directory, const std::string& relative) {
  if (directory.empty()) return "";
  return directory.back() == '/' ? directory + relative : directory + "/" + relative;
}

// A search path as an absolute directory without a trailing slash: Slang
// resolves relative ones against the working directory.
std::string SearchDirectory(const SessionConfig& config, const std::string& search_path) {
  std::string directory = search_path;
  if (directory.empty() || directory == ".") {
    directory = config.working_directory;
  } else if (directory.front() != '/') {
    if (config.working_directory.empty()) return "";
    directory = Join(config.working_directory,
                     directory.starts_with("./") ? directory.substr(2) : directory);
  }
  while (directory.size() > 1 && directory.back() == '/') directory.pop_back();
  return directory;
}

// The directories Slang searches, in order: sgl passes its include paths as
// Include options; a SessionDesc may list search paths too.
std::vector<std::string> SearchPaths(const SessionConfig& config) {
  std::vector<std::string> paths;
  for (const CompilerOption& option : config.options) {
    if (option.name == static_cast<int32_t>(slang::CompilerOptionName::Include))
      paths.push_back(option.string0);
  }
  paths.insert(paths.end(), config.search_paths.begin(), config.search_paths.end());
  return paths;
}

// The part of `path` below `directory`, if it lies below it.
bool Below(const std::string& directory, const std::string& path, std::string* relative) {
  if (directory.empty() || directory == "/") return false;
  if (!path.starts_with(directory) || path.size() <= directory.size() + 1 ||
      path[directory.size()] != '/')
    return false;
  *relative = path.substr(directory.size() + 1);
  return true;
}

}  // namespace

RootedPath RootPath(const SessionConfig& config, const std::string& path,
                    const std::vector<std::string>& request_directories) {
  RootedPath best{PathRoot::kAbsolute, 0, path};
  size_t best_length = 0;
  auto consider = [&](PathRoot root, uint32_t index, const std::string& directory) {
    std::string relative;
    if (directory.size() > best_length && Below(directory, path, &relative)) {
      best = {root, index, std::move(relative)};
      best_length = directory.size();
    }
  };
  consider(PathRoot::kSlangpy, 0, config.slangpy_directory);
  const std::vector<std::string> search_paths = SearchPaths(config);
  for (uint32_t i = 0; i < search_paths.size(); ++i)
    consider(PathRoot::kSearchPath, static_cast<uint32_t>(search_paths.size()) - 1 - i,
             SearchDirectory(config, search_paths[i]));
  if (best.root == PathRoot::kAbsolute) {
    for (uint32_t i = 0; i < request_directories.size(); ++i) {
      std::string relative;
      if (Below(request_directories[i], path, &relative))
        return {PathRoot::kRequestDirectory, i, std::move(relative)};
    }
  }
  // Last: a search path that is the working directory ranks first.
  consider(PathRoot::kWorkingDirectory, 0, SearchDirectory(config, "."));
  return best;
}

std::vector<std::string> RequestDirectories(const SessionConfig& config,
                                            const std::vector<std::string>& requested) {
  std::vector<std::string> directories;
  for (const std::string& path : requested) {
    const size_t slash = path.rfind('/');
    if (!path.starts_with('/') || slash == 0 || slash == std::string::npos) continue;
    const RootedPath rooted = RootPath(config, path);
    if (rooted.root != PathRoot::kAbsolute && rooted.root != PathRoot::kWorkingDirectory) continue;
    directories.push_back(path.substr(0, slash));
  }
  std::sort(directories.begin(), directories.end());
  directories.erase(std::unique(directories.begin(), directories.end()), directories.end());
  std::vector<std::string> outermost;
  for (const std::string& directory : directories) {
    std::string relative;
    if (std::none_of(outermost.begin(), outermost.end(),
                     [&](const std::string& outer) { return Below(outer, directory, &relative); }))
      outermost.push_back(directory);
  }
  return outermost;
}

std::string PathUnderRoot(const SessionConfig& config, const RootedPath& rooted,
                          uint32_t request_index, const std::string& request_directory) {
  switch (rooted.root) {
    case PathRoot::kAbsolute:
      return rooted.relative;
    case PathRoot::kRequestDirectory:
      return rooted.index == request_index ? Join(request_directory, rooted.relative) : "";
    case PathRoot::kSlangpy:
      return Join(config.slangpy_directory, rooted.relative);
    case PathRoot::kWorkingDirectory:
      return Join(SearchDirectory(config, "."), rooted.relative);
    case PathRoot::kSearchPath: {
      const std::vector<std::string> search_paths = SearchPaths(config);
      if (rooted.index >= search_paths.size()) return "";
      return Join(SearchDirectory(config, search_paths[search_paths.size() - 1 - rooted.index]),
                  rooted.relative);
    }
  }
  return "";
}

std::vector<std::string> PathsSearchedBefore(const SessionConfig& config,
                                             const RootedPath& rooted) {
  std::vector<std::string> earlier;
  if (rooted.root != PathRoot::kSearchPath) return earlier;
  const std::vector<std::string> search_paths = SearchPaths(config);
  if (rooted.index >= search_paths.size()) return earlier;
  for (size_t i = 0; i < search_paths.size() - 1 - rooted.index; ++i) {
    std::string candidate = Join(SearchDirectory(config, search_paths[i]), rooted.relative);
    if (!candidate.empty()) earlier.push_back(std::move(candidate));
  }
  return earlier;
}

}  // namespace spreplay
