#include "interpose/type_declarations.h"

#include <dlfcn.h>

#include <functional>
#include <string_view>

#include "fmt/format.h"

namespace spreplay {
namespace {

// "ns::Outer<int>::Inner<3>" names the declaration "ns::Outer::Inner".
std::string WithoutGenericArguments(std::string_view name) {
  std::string declaration;
  int depth = 0;
  for (char c : name) {
    if (c == '<') ++depth;
    if (depth == 0) declaration += c;
    if (c == '>' && depth > 0) --depth;
  }
  return declaration;
}

template <typename Function>
absl::Status Find(void* handle, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(handle, name));
  if (function) return absl::OkStatus();
  return absl::NotFoundError(fmt::format("the Slang library has no {}", name));
}

}  // namespace

absl::StatusOr<DeclarationApi> DeclarationApiIn(void* handle) {
  DeclarationApi api;
  for (absl::Status status : {
           Find(handle, "spReflectionType_GetFullName", api.type_full_name),
           Find(handle, "spReflectionDecl_getChildrenCount", api.child_count),
           Find(handle, "spReflectionDecl_getChild", api.child),
           Find(handle, "spReflectionDecl_getKind", api.kind),
           Find(handle, "spReflection_getTypeFromDecl", api.type_of),
           Find(handle, "spReflectionDecl_castToGeneric", api.as_generic),
           Find(handle, "spReflectionGeneric_GetInnerDecl", api.generic_inner),
       }) {
    if (!status.ok()) return status;
  }
  return api;
}

std::string TypeFullName(const DeclarationApi& api, slang::TypeReflection* type) {
  if (!type || !api.type_full_name) return "";
  ISlangBlob* blob = nullptr;
  if (SLANG_FAILED(api.type_full_name(reinterpret_cast<SlangReflectionType*>(type), &blob)) ||
      !blob)
    return "";
  std::string name(static_cast<const char*>(blob->getBufferPointer()), blob->getBufferSize());
  blob->release();
  while (!name.empty() && name.back() == '\0') name.pop_back();
  return name;
}

std::vector<slang::IModule*> ModulesDeclaring(const DeclarationApi& api, slang::ISession* session,
                                              slang::TypeReflection* type) {
  std::vector<slang::IModule*> declaring;
  if (!api.child || !session || !type) return declaring;
  const std::string wanted = WithoutGenericArguments(TypeFullName(api, type));
  if (wanted.empty()) return declaring;

  auto declares = [&](SlangReflectionDecl* declaration) {
    return WithoutGenericArguments(TypeFullName(
               api, reinterpret_cast<slang::TypeReflection*>(api.type_of(declaration)))) == wanted;
  };
  // Types nest in namespaces and in other types; functions and variables
  // declare none that a conformance could name.
  std::function<bool(SlangReflectionDecl*)> search = [&](SlangReflectionDecl* scope) {
    const unsigned count = api.child_count(scope);
    for (unsigned i = 0; i < count; ++i) {
      SlangReflectionDecl* declaration = api.child(scope, i);
      if (!declaration) continue;
      switch (api.kind(declaration)) {
        case SLANG_DECL_KIND_STRUCT:
          if (declares(declaration) || search(declaration)) return true;
          break;
        case SLANG_DECL_KIND_ENUM:
          if (declares(declaration)) return true;
          break;
        case SLANG_DECL_KIND_NAMESPACE:
          if (search(declaration)) return true;
          break;
        case SLANG_DECL_KIND_GENERIC: {
          SlangReflectionGeneric* generic = api.as_generic(declaration);
          SlangReflectionDecl* inner = generic ? api.generic_inner(generic) : nullptr;
          if (inner && api.kind(inner) == SLANG_DECL_KIND_STRUCT &&
              (declares(inner) || search(inner)))
            return true;
          break;
        }
        default:
          break;
      }
    }
    return false;
  };
  const SlangInt modules = session->getLoadedModuleCount();
  for (SlangInt i = 0; i < modules; ++i) {
    slang::IModule* module = session->getLoadedModule(i);
    slang::DeclReflection* root = module ? module->getModuleReflection() : nullptr;
    if (root && search(reinterpret_cast<SlangReflectionDecl*>(root))) declaring.push_back(module);
  }
  return declaring;
}

}  // namespace spreplay
