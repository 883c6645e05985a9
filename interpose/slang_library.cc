#include "interpose/slang_library.h"

#include <dlfcn.h>
#include <link.h>

#include "build_info/slang_build.h"
#include "fmt/format.h"

namespace spreplay {
namespace {

template <typename Function>
absl::Status Find(void* handle, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(handle, name));
  if (function) return absl::OkStatus();
  return absl::NotFoundError(fmt::format("the Slang library has no {}", name));
}

// The file `handle` is: `requested` when that is a path, the file the loader
// chose when it was asked by file name.
std::string LoadedPath(void* handle, const std::string& requested) {
  if (requested.find('/') != std::string::npos) return requested;
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0] != '\0')
    return map->l_name;
  return requested;
}

}  // namespace

std::string SlangLibrary::Directory() const {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

absl::StatusOr<SlangLibrary> OpenSlangLibrary(const std::string& library) {
  // Local: the process that loaded slangpy keeps its own view of Slang's
  // symbols, and the tool has nothing else that needs them.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return absl::NotFoundError(fmt::format("cannot load {}: {}", library, dlerror()));
  SlangLibrary slang;
  slang.path = LoadedPath(handle, library);
  DeclarationApi& declarations = slang.declarations;
  for (absl::Status status : {
           Find(handle, "spReflectionType_GetFullName", declarations.type_full_name),
           Find(handle, "spReflectionDecl_getChildrenCount", declarations.child_count),
           Find(handle, "spReflectionDecl_getChild", declarations.child),
           Find(handle, "spReflectionDecl_getKind", declarations.kind),
           Find(handle, "spReflection_getTypeFromDecl", declarations.type_of),
           Find(handle, "spReflectionDecl_castToGeneric", declarations.as_generic),
           Find(handle, "spReflectionGeneric_GetInnerDecl", declarations.generic_inner),
           Find(handle, "spReflectionType_GetGenericContainer", declarations.generic_of_type),
           Find(handle, "slang_createGlobalSession2", slang.create_global_session),
           Find(handle, "spGetBuildTagString", slang.build_tag),
           Find(handle, "spReflection_FindTypeByName", slang.find_type_by_name),
           Find(handle, "spReflection_ToJson", slang.layout_to_json),
       }) {
    if (!status.ok()) return status;
  }
  return slang;
}

absl::Status RequireThisSlangBuild(const SlangLibrary& slang, std::string_view what) {
  const char* tag = slang.build_tag ? slang.build_tag() : nullptr;
  if (std::string_view(tag ? tag : "") == kSlangBuild) return absl::OkStatus();
  return absl::FailedPreconditionError(fmt::format(
      "{} is Slang {}, but this spreplay {} is built for Slang {}; spreplay supports {}",
      slang.path, tag ? tag : "of unknown build", what, kSlangBuild, kSupportedBuilds));
}

}  // namespace spreplay
