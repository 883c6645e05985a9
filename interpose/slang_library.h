#pragma once
// The C functions of Slang's API that spreplay calls; the rest of the API is
// COM interfaces reached through a global session. They are looked up at run
// time in the Slang library the process uses, so no spreplay binary links a
// library of the user's slangpy: the hooks find it inside slangpy's process,
// the tool wherever slangpy is installed beside it.

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "interpose/type_declarations.h"
#include "slang.h"

namespace spreplay {

struct SlangLibrary {
  // The file it was loaded from (libslang-compiler in slangpy's package).
  std::string path;
  decltype(&slang_createGlobalSession2) create_global_session = nullptr;
  decltype(&spGetBuildTagString) build_tag = nullptr;
  decltype(&spReflection_FindTypeByName) find_type_by_name = nullptr;
  decltype(&spReflection_ToJson) layout_to_json = nullptr;
  DeclarationApi declarations;

  // The directory of `path`: the slangpy package it belongs to.
  std::string Directory() const;
};

// Loads `library` (a path, or a file name the dynamic loader looks up the way
// it looks up the calling binary's own libraries) and finds every function.
// Loading a library the process has already loaded returns that one.
absl::StatusOr<SlangLibrary> OpenSlangLibrary(const std::string& library);

// FailedPrecondition, naming both builds and `what` ("library", "tool"),
// unless `slang` is the Slang build this spreplay binary was compiled
// against: its vtable slots and methods are of that build's slang.h alone.
absl::Status RequireThisSlangBuild(const SlangLibrary& slang, std::string_view what);

}  // namespace spreplay
