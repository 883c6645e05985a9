#include "interpose/type_declarations.h"

#include <functional>

namespace spreplay {

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

slang::IModule* ModuleDeclaring(const DeclarationApi& api, slang::ISession* session,
                                slang::TypeReflection* type) {
  if (!api.child || !session || !type) return nullptr;
  auto* wanted = reinterpret_cast<SlangReflectionType*>(type);
  // Slang makes one type object per declaration (and per set of generic
  // arguments), so a non-generic type is its declaration's type; an instance
  // of a generic type names its generic.
  SlangReflectionGeneric* wanted_generic = api.generic_of_type(wanted);
  std::function<bool(SlangReflectionDecl*)> search = [&](SlangReflectionDecl* scope) {
    const unsigned count = api.child_count(scope);
    for (unsigned i = 0; i < count; ++i) {
      SlangReflectionDecl* declaration = api.child(scope, i);
      if (!declaration) continue;
      switch (api.kind(declaration)) {
        case SLANG_DECL_KIND_STRUCT:
          if (api.type_of(declaration) == wanted || search(declaration)) return true;
          break;
        case SLANG_DECL_KIND_ENUM:
          if (api.type_of(declaration) == wanted) return true;
          break;
        case SLANG_DECL_KIND_NAMESPACE:
          if (search(declaration)) return true;
          break;
        case SLANG_DECL_KIND_GENERIC: {
          SlangReflectionGeneric* generic = api.as_generic(declaration);
          if (generic && generic == wanted_generic) return true;
          SlangReflectionDecl* inner = generic ? api.generic_inner(generic) : nullptr;
          if (inner && api.kind(inner) == SLANG_DECL_KIND_STRUCT && search(inner)) return true;
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
    if (root && search(reinterpret_cast<SlangReflectionDecl*>(root))) return module;
  }
  return nullptr;
}

}  // namespace spreplay
