#pragma once
// What a recorded kernel read besides its component tree: the bytes of every
// source file, by the path Slang reported for it (a module's dependency
// paths, which are the files' unique identities: canonical paths for files
// read from disk).

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "interpose/component.h"

namespace spreplay {

struct Snapshot {
  absl::flat_hash_map<std::string, std::shared_ptr<const std::string>> files;
  // Modules loaded from strings that a module of the program imports without
  // being part of the program's tree; the tree only names them by their
  // pseudo path and digest, and rebuilding the importer needs their text.
  std::vector<ComponentPtr> string_modules;

  void AddFile(std::string path, std::string bytes) {
    files.insert_or_assign(std::move(path), std::make_shared<const std::string>(std::move(bytes)));
  }
};

}  // namespace spreplay
