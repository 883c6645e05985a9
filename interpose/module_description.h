#pragma once
// Describes a module Slang just loaded by its content: the one definition
// both the hooks (recording, serving) and the replayer use, so that the
// descriptions, and the keys made from them, agree.

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/sha256.h"
#include "interpose/component.h"
#include "slang.h"

namespace spreplay {

// How a module was handed to Slang: what the module object itself cannot tell.
struct ModuleRequest {
  std::string requested_name;         // ISession::loadModule's argument
  std::optional<std::string> source;  // loadModuleFromSourceString's text
  std::string path;                   // loadModuleFromSourceString's path, "" for none
};

// The content digest of a dependency path: a module loaded from a string,
// by the pseudo path Slang named it with, or a file Slang read; an error says
// why the path cannot be accounted for.
using DependencyDigest = std::function<absl::StatusOr<Digest>(const std::string& path)>;

// A module imported by name that was served from serialized IR: the files
// (or, for one loaded from a string when it was recorded, the pseudo path) a
// module importing it listed when it came from source. Slang does not always
// list them for a module that imports one loaded from IR: a string module has
// no pseudo path of its own then, and a file module's files can go missing
// (seen with slangpy's wrapper of a module loaded by path on the H200).
struct ServedImport {
  std::vector<SourceFile> files;
};
using ServedImportNamed = std::function<std::optional<ServedImport>(const std::string& name)>;

// `served_import`, when given, completes the dependencies of a module loaded
// from a string with those of the modules it imports that were served from
// IR, so that it is described as it was when they came from source.
absl::StatusOr<ComponentPtr> DescribeLoadedModule(slang::IModule* module,
                                                  const ModuleRequest& request,
                                                  const DependencyDigest& digest_of,
                                                  const ServedImportNamed& served_import = nullptr);

}  // namespace spreplay
