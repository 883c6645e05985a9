#pragma once
// Which loaded modules declare a type: a type conformance's code comes from
// the module that declares the type, so its key includes that module.

#include <string>
#include <vector>

#include "slang.h"

namespace spreplay {

// The part of Slang's reflection C API that walking declarations needs, as
// found in the Slang library the process uses (interpose/slang_library.h).
struct DeclarationApi {
  decltype(&spReflectionType_GetFullName) type_full_name = nullptr;
  decltype(&spReflectionDecl_getChildrenCount) child_count = nullptr;
  decltype(&spReflectionDecl_getChild) child = nullptr;
  decltype(&spReflectionDecl_getKind) kind = nullptr;
  decltype(&spReflection_getTypeFromDecl) type_of = nullptr;
  decltype(&spReflectionDecl_castToGeneric) as_generic = nullptr;
  decltype(&spReflectionGeneric_GetInnerDecl) generic_inner = nullptr;
  decltype(&spReflectionType_GetGenericContainer) generic_of_type = nullptr;
};

// "" when Slang cannot name the type.
std::string TypeFullName(const DeclarationApi& api, slang::TypeReflection* type);

// The module loaded in `session` whose declaration `type` is (a struct or
// enum, or an instance of a generic one), found by identity, not by name:
// several modules may declare types of one name. Null for a type of Slang's
// core module.
slang::IModule* ModuleDeclaring(const DeclarationApi& api, slang::ISession* session,
                                slang::TypeReflection* type);

}  // namespace spreplay
